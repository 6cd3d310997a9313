/**
 * The two automation entry points that authenticate by their own means, never as a user: the
 * scheduler tick (a bearer secret, compared in constant time) and webhook deliveries (signed,
 * delivery ids deduplicated). Every refusal is on the audit record before it is answered.
 */
import type { Kysely } from 'kysely';
import type { AuditLog } from '../agent/audit.js';
import { safeEqual } from '../identity/keys.js';
import type { Database } from '../store/database.js';
import { checkWebhook, type WebhookDelivery } from './webhooks.js';

export interface AutomationSettings {
  /** Bearer secret of the tick; unset refuses every tick. */
  tickSecret?: string;
  /** Webhook sources and their signing secrets. */
  webhooks?: Record<string, string>;
}

/** What became of a delivery: accepted (once per id), or refused. */
export type WebhookReceipt = { accepted: true; id: string; duplicate: boolean } | { accepted: false };

export class Automations {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly audit: AuditLog,
    private readonly settings: AutomationSettings,
  ) {}

  /** The scheduler's tick with the bearer it presented: what fired, or null when refused. */
  async tick(token: string | null): Promise<{ fired: number } | null> {
    const secret = this.settings.tickSecret;
    if (!secret || !token || !safeEqual(token, secret)) {
      await this.audit.recordNow(null, 'tick.rejected', {
        reason: secret ? 'bad_secret' : 'no_secret_configured',
      });
      return null;
    }
    // No automation is due in this release; the answer's shape is the stable contract.
    return { fired: 0 };
  }

  /**
   * Checks a delivery against its source's secret and remembers its id. An unknown source is
   * refused like a bad signature, so sources are not revealed.
   */
  async receiveWebhook(source: string, delivery: WebhookDelivery): Promise<WebhookReceipt> {
    const secret = this.settings.webhooks?.[source];
    const rejection = secret ? checkWebhook(secret, delivery) : 'unknown_source';
    if (rejection) {
      await this.audit.recordNow(null, 'webhook.rejected', {
        source: source.slice(0, 64),
        reason: rejection,
      });
      return { accepted: false };
    }
    // checkWebhook accepted it, so it has an id.
    const id = delivery.id as string;
    const fresh = await this.db
      .insertInto('wire_webhook_deliveries')
      .values({ source, delivery_id: id })
      .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
      .returning('delivery_id')
      .executeTakeFirst();
    return { accepted: true, id, duplicate: fresh === undefined };
  }
}
