/**
 * Automations: records that start agent runs on their own. A schedule fires when a tick finds it
 * due (`POST /tick`, or the built-in scheduler, which calls the same code); a webhook automation
 * fires on each new verified delivery of its source. The tick and webhook deliveries
 * authenticate by their own means, never as a user: the tick by a bearer secret compared in
 * constant time, deliveries by their source's signature. Every refusal is on the audit record
 * before it is answered.
 *
 * Exactly once across instances: a schedule's occurrence is claimed in the store
 * (`AutomationStore.claim`), a delivery by its id (a unique row), before any run starts.
 */
import type { UIMessage } from 'ai';
import type { Kysely } from 'kysely';
import type { AuditLog } from '../agent/audit.js';
import { newId } from '../agent/ids.js';
import { RunError } from '../agent/run-error.js';
import type { RunHub } from '../agent/run-hub.js';
import type { RunView } from '../agent/run-rows.js';
import type { Principal, RunContext } from '../agent/tools.js';
import { ownValue, storableText, textProblem } from '../http/input-guard.js';
import { describeError, type Logger } from '../http/logger.js';
import { safeEqual } from '../identity/keys.js';
import { writeNowOrOnceBack } from '../store/availability.js';
import type { Database } from '../store/database.js';
import { type AutomationRow, AutomationStore } from './records.js';
import {
  checkGithubWebhook,
  checkStripeWebhook,
  checkWebhook,
  type WebhookRejection,
  type WebhookSource,
} from './webhooks.js';

export interface AutomationSettings {
  /** Bearer secret of the tick; unset refuses every tick. */
  tickSecret?: string;
  /** Webhook sources and their verification. */
  webhooks?: Record<string, WebhookSource>;
  /** The built-in scheduler's interval; unset: no scheduler (an outside one calls `POST /tick`). */
  schedulerIntervalMs?: number;
}

/** A delivery as it arrived: the headers its source's scheme reads, and the raw body. */
export interface IncomingDelivery {
  headers: Record<string, string | undefined>;
  body: Uint8Array;
}

/**
 * What became of a delivery: accepted (once per id, with the runs it started), or refused: by
 * its verification, or (`problem`) for a delivery id that is not clean text.
 */
export type WebhookReceipt =
  | { accepted: true; id: string; duplicate: boolean; runs: string[] }
  | { accepted: false; problem?: string };

/** What one tick did: how many automations fired, and the run each started. */
export interface TickResult {
  fired: number;
  runs: { automation: string; run: string }[];
}

/** What a rerun asked of a run that cannot be rerun. */
export type RerunOutcome =
  | { run: RunView }
  | { refused: 'not_found' | 'not_rerunnable' | 'automation_deleted' };

/** Due schedules one tick takes at most; the rest are due at the next tick. */
const TICK_BATCH = 100;
/** How long a delivery whose runs did not start is forgotten again, in the background, while the store is away. */
const FORGET_DELIVERY_RETRY_MS = 60_000;
/**
 * How long a delivery id of a source that signs a timestamp is remembered: past every sender's
 * retries (Stripe retries for three days), while a replay of the old delivery already fails its
 * signature's timestamp window. GitHub signs no timestamp, so its ids, the only guard against a
 * replay, are kept.
 */
export const DELIVERY_ID_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** How often, at most, an instance forgets delivery ids past their retention, as deliveries arrive. */
const DELIVERY_SWEEP_EVERY_MS = 60 * 60 * 1000;
/** Characters of a delivery's body the run's message carries. */
const DELIVERY_TEXT_CAP = 32_000;

export class Automations {
  readonly records: AutomationStore;
  #scheduler: ReturnType<typeof setInterval> | null = null;
  #ticking: Promise<TickResult> | null = null;
  #deliveriesSweptAt = Number.NEGATIVE_INFINITY;
  /** The sweep of delivery ids under way, which closing waits for (it settles, never rejects). */
  #sweeping: Promise<void> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly audit: AuditLog,
    private readonly runs: RunHub,
    private readonly logger: Logger,
    private readonly settings: AutomationSettings,
  ) {
    this.records = new AutomationStore(db);
  }

  /** Names of the configured webhook sources (an automation may only name one of these). */
  get webhookSources(): string[] {
    return Object.keys(this.settings.webhooks ?? {});
  }

  get tickConfigured(): boolean {
    return Boolean(this.settings.tickSecret);
  }

  get schedulerIntervalMs(): number | null {
    return this.settings.schedulerIntervalMs ?? null;
  }

  /** The scheduler's tick with the bearer it presented: what fired, or null when refused. */
  async tick(token: string | null): Promise<TickResult | null> {
    const secret = this.settings.tickSecret;
    if (!secret || !token || !safeEqual(token, secret)) {
      await this.audit.recordNow(null, 'tick.rejected', {
        reason: secret ? 'bad_secret' : 'no_secret_configured',
      });
      return null;
    }
    return this.fireDue();
  }

  /**
   * Fires every schedule that is due: each claims its occurrence in the store first, so an
   * instance racing this one for it fires nothing. The claim moves the schedule to its first
   * occurrence after now, so one that missed several (the service was down) fires once.
   */
  async fireDue(now = new Date()): Promise<TickResult> {
    const result: TickResult = { fired: 0, runs: [] };
    // A closing instance claims nothing: the occurrence stays for an instance that can run it.
    if (this.runs.closing) return result;
    for (const row of await this.records.due(now, TICK_BATCH)) {
      if (!(await this.records.claim(row, now))) continue;
      const principal = row.principal as Principal;
      const run = await this.#start(row, principal, 'schedule', row.owner, row.prompt).catch(
        (error: unknown) => {
          this.logger.error('automation run not started', { automation_id: row.id, ...describeError(error) });
          return null;
        },
      );
      if (!run) continue;
      result.fired++;
      result.runs.push({ automation: row.id, run: run.id });
    }
    return result;
  }

  /** Starts the built-in scheduler: `fireDue` every `schedulerIntervalMs`, one tick at a time. */
  startScheduler(): void {
    const interval = this.settings.schedulerIntervalMs;
    if (!interval || this.#scheduler) return;
    this.#scheduler = setInterval(() => {
      if (this.#ticking) return;
      this.#ticking = this.fireDue()
        .catch((error: unknown) => {
          this.logger.warn('scheduled tick failed', describeError(error));
          return { fired: 0, runs: [] };
        })
        .finally(() => {
          this.#ticking = null;
        });
    }, interval);
    this.#scheduler.unref?.();
  }

  /** Stops the built-in scheduler and waits for a tick in progress. */
  async close(): Promise<void> {
    if (this.#scheduler) clearInterval(this.#scheduler);
    this.#scheduler = null;
    await this.#ticking;
    await this.#sweeping;
  }

  /**
   * Checks a delivery against its source's verification, remembers its id (once across
   * instances), and starts a run of every active automation of the source, as
   * `service:webhook:<source>`. An unknown source is refused like a bad signature, so sources
   * are not revealed.
   */
  async receiveWebhook(source: string, delivery: IncomingDelivery): Promise<WebhookReceipt> {
    // Own sources only: `constructor` or `__proto__` names no source.
    const configured = ownValue(this.settings.webhooks ?? {}, source);
    const verdict = configured ? verify(configured, delivery) : { rejection: 'unknown_source' as const };
    if ('rejection' in verdict) {
      await this.audit.recordNow(null, 'webhook.rejected', {
        source: shownSource(source),
        reason: verdict.rejection,
      });
      return { accepted: false };
    }
    const { id } = verdict;
    // An id with a NUL or a lone surrogate cannot be stored, so it cannot be remembered once:
    // refused (400) rather than faulting on every retry. Real senders' ids are plain ASCII.
    const idProblem = textProblem(id);
    if (idProblem) {
      await this.audit.recordNow(null, 'webhook.rejected', {
        source: shownSource(source),
        reason: 'invalid_id',
      });
      return { accepted: false, problem: `delivery id ${idProblem}` };
    }
    // Refused before the id is remembered, so the sender's retry reaches another instance.
    if (this.runs.closing)
      throw new RunError('stopping', 'The service is stopping; send the delivery again shortly.');
    const fresh = await this.db
      .insertInto('wire_webhook_deliveries')
      .values({ source, delivery_id: id })
      .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
      .returning('delivery_id')
      .executeTakeFirst();
    if (!fresh) return { accepted: true, id, duplicate: true, runs: [] };
    this.#sweepDeliveries();
    const principal: Principal = { subject: `service:webhook:${source}`, kind: 'service' };
    const text = deliveryText(source, id, delivery.body);
    const runs: string[] = [];
    try {
      for (const row of await this.records.forSource(source)) {
        const run = await this.#start(row, principal, 'webhook', row.owner, `${row.prompt}\n\n${text}`);
        runs.push(run.id);
      }
    } catch (error) {
      // With no run started, the id is forgotten so the sender's retry is not taken for a
      // duplicate; once one has started, a retry would start it twice, so the id stays.
      // A store that went away meanwhile (the likely cause) is written to once it is back.
      if (runs.length === 0) {
        await writeNowOrOnceBack(
          () =>
            this.db
              .deleteFrom('wire_webhook_deliveries')
              .where('source', '=', source)
              .where('delivery_id', '=', id)
              .execute(),
          FORGET_DELIVERY_RETRY_MS,
        );
      }
      throw error;
    }
    return { accepted: true, id, duplicate: false, runs };
  }

  /**
   * Runs an automation's run again: the same message, as the same principal, on a new thread,
   * answering to `subject` (who asked). Chat turns are not rerun (regenerate them instead).
   */
  async rerun(subject: string, runId: string): Promise<RerunOutcome> {
    const original = await this.runs.getRun(subject, runId);
    if (!original) return { refused: 'not_found' };
    if (!original.automationId) return { refused: 'not_rerunnable' };
    const message = await this.runs.firstUserMessage(original.owner, original.threadId);
    if (!message) return { refused: 'not_rerunnable' };
    // A deleted automation runs no more: a rerun would bring back what its owner removed, and the
    // principal it ran as went with it.
    const automation = await this.records.ownerAndPrincipal(original.automationId);
    if (!automation) return { refused: 'automation_deleted' };
    // A schedule's run ran as the automation's owner, with the principal saved with it; a
    // delivery's as the service (`service:webhook:<source>`), which is the run's owner.
    const principal: Principal =
      automation.owner === original.owner
        ? automation.principal
        : { subject: original.owner, kind: 'service' };
    const origin: RunContext = { actor: subject, automationId: original.automationId, trigger: 'rerun' };
    const live = await this.runs.startTurn(principal, newId('thr'), freshCopy(message), null, origin);
    this.audit.record(subject, 'run.rerun', { runId: live.id, of: original.id });
    const run = await this.runs.getRun(subject, live.id);
    return run ? { run } : { refused: 'not_found' };
  }

  /** Forgets, in the background and at most hourly, the delivery ids past their retention. */
  #sweepDeliveries(): void {
    const now = Date.now();
    if (now - this.#deliveriesSweptAt < DELIVERY_SWEEP_EVERY_MS) return;
    this.#deliveriesSweptAt = now;
    const timestamped = Object.entries(this.settings.webhooks ?? {})
      .filter(([, source]) => typeof source === 'string' || source.scheme !== 'github')
      .map(([name]) => name);
    if (timestamped.length === 0) return;
    this.#sweeping = this.db
      .deleteFrom('wire_webhook_deliveries')
      .where('source', 'in', timestamped)
      .where('received_at', '<', new Date(now - DELIVERY_ID_RETENTION_MS))
      .execute()
      .then(
        () => {},
        (error) => this.logger.warn('webhook delivery ids not swept', describeError(error)),
      );
  }

  async #start(
    row: AutomationRow,
    principal: Principal,
    trigger: 'schedule' | 'webhook',
    actor: string,
    text: string,
  ): Promise<{ id: string }> {
    const message: UIMessage = { id: newId('msg'), role: 'user', parts: [{ type: 'text', text }] };
    const origin: RunContext = { actor, automationId: row.id, trigger };
    const run = await this.runs.startTurn(principal, newId('thr'), message, null, origin);
    // A schedule's claim already wrote its last_run_at.
    if (trigger === 'webhook') await this.records.markRan(row.id, new Date());
    this.audit.record(actor, 'automation.fired', { automationId: row.id, runId: run.id, trigger });
    return run;
  }
}

function verify(
  source: WebhookSource,
  delivery: IncomingDelivery,
): { id: string } | { rejection: WebhookRejection } {
  const { headers, body } = delivery;
  const { scheme, secret } =
    typeof source === 'string' ? { scheme: 'standard-webhooks', secret: source } : source;
  if (scheme === 'stripe')
    return checkStripeWebhook(secret, { signature: headers['stripe-signature'], body });
  if (scheme === 'github') {
    const id = headers['x-github-delivery'];
    const rejection = checkGithubWebhook(secret, { id, signature: headers['x-hub-signature-256'], body });
    return rejection ? { rejection } : { id: id as string };
  }
  const id = headers['webhook-id'];
  const rejection = checkWebhook(secret, {
    id,
    timestamp: headers['webhook-timestamp'],
    signatures: headers['webhook-signature'],
    body,
  });
  return rejection ? { rejection } : { id: id as string };
}

/**
 * A refused delivery's source as its audit event keeps it: 64 characters at most, counted as
 * code points, so the cut never splits an emoji's pair (a lone half could not be stored, and the
 * refusal would go unrecorded).
 */
function shownSource(source: string): string {
  return [...source].slice(0, 64).join('');
}

/**
 * The delivery as the run's message shows it: where it came from, and its body as text. A NUL
 * or lone surrogate (sent raw, or made by the cap cutting a pair) is shown as U+FFFD: the signed
 * delivery is genuine and the store cannot hold those characters, so it is taken with them
 * replaced. (An escaped `\u0000` in the body's JSON is plain text here and needs nothing.)
 */
function deliveryText(source: string, id: string, body: Uint8Array): string {
  const text = new TextDecoder().decode(body);
  const shown =
    text.length <= DELIVERY_TEXT_CAP
      ? text
      : `${text.slice(0, DELIVERY_TEXT_CAP)}\n[truncated: showing ${DELIVERY_TEXT_CAP} of ${text.length} characters]`;
  return storableText(`Webhook delivery ${id} from ${source}:\n${shown}`);
}

function freshCopy(message: UIMessage): UIMessage {
  return { ...message, id: newId('msg') };
}
