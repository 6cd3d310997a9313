/**
 * Automation records (`atm_...`), each owned by the user who saved it and read only by them. A
 * record carries its trigger inline: a cron schedule in a time zone, or a webhook source.
 */
import type { Kysely, Selectable, Transaction } from 'kysely';
import { newId } from '../agent/ids.js';
import type { Principal } from '../agent/tools.js';
import type { Database, WireAutomationsTable } from '../store/database.js';
import { after, exactCreatedAt, type ListPosition, type Page, pageOf } from '../store/keyset.js';
import { nextOccurrence, type Schedule } from './schedule.js';

export type AutomationTrigger = ({ type: 'schedule' } & Schedule) | { type: 'webhook'; source: string };

export interface AutomationView {
  id: string;
  name: string;
  prompt: string;
  status: 'active' | 'paused';
  trigger: AutomationTrigger;
  nextRunAt: string | null;
  lastRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AutomationInput {
  name: string;
  prompt: string;
  trigger: AutomationTrigger;
}

export type AutomationRow = Selectable<WireAutomationsTable>;

export class AutomationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async create(principal: Principal, input: AutomationInput, now = new Date()): Promise<AutomationView> {
    const row = await this.db
      .insertInto('wire_automations')
      .values({
        id: newId('atm'),
        owner: principal.subject,
        principal: JSON.stringify(principal),
        name: input.name,
        prompt: input.prompt,
        status: 'active',
        ...triggerColumns(input.trigger, 'active', now),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return viewOf(row);
  }

  /** The owner's automations, newest first, after the position `cursor` names (a page's cursor). */
  async list(
    owner: string,
    options: { limit: number; cursor?: ListPosition },
  ): Promise<Page<AutomationView>> {
    let query = this.db
      .selectFrom('wire_automations')
      .selectAll()
      .select(exactCreatedAt.as('cursor_at'))
      .where('owner', '=', owner)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(options.limit + 1);
    if (options.cursor) query = query.where(after(options.cursor));
    return pageOf(await query.execute(), options.limit, viewOf);
  }

  async get(owner: string, id: string): Promise<AutomationView | null> {
    const row = await this.db
      .selectFrom('wire_automations')
      .selectAll()
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? viewOf(row) : null;
  }

  /**
   * Changes what is given; a new trigger (or a change to it) starts its schedule from now. The
   * owner's principal is taken afresh, so later runs see the user as the host resolves them now.
   */
  async update(
    principal: Principal,
    id: string,
    patch: Partial<AutomationInput>,
    now = new Date(),
  ): Promise<AutomationView | null> {
    const owner = principal.subject;
    return this.db.transaction().execute(async (trx) => {
      const current = await lockOwned(trx, owner, id);
      if (!current) return null;
      const row = await trx
        .updateTable('wire_automations')
        .set({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.prompt !== undefined ? { prompt: patch.prompt } : {}),
          ...(patch.trigger ? triggerColumns(patch.trigger, current.status, now) : {}),
          principal: JSON.stringify(principal),
          updated_at: now,
        })
        .where('owner', '=', owner)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return viewOf(row);
    });
  }

  /**
   * Pauses or resumes. A paused schedule has no next occurrence; a resumed one fires at its next
   * occurrence from now (what it missed while paused is not made up). `changed` is false when it
   * already had that status (a repeat, or the loser of two racing asks): nothing was done.
   */
  async setStatus(
    owner: string,
    id: string,
    status: 'active' | 'paused',
    now = new Date(),
  ): Promise<{ automation: AutomationView; changed: boolean } | null> {
    return this.db.transaction().execute(async (trx) => {
      const current = await lockOwned(trx, owner, id);
      if (!current) return null;
      if (current.status === status) return { automation: viewOf(current), changed: false };
      const schedule = current.trigger_type === 'schedule' && status === 'active';
      const row = await trx
        .updateTable('wire_automations')
        .set({
          status,
          next_run_at: schedule ? nextOccurrence(scheduleOf(current), now) : null,
          updated_at: now,
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { automation: viewOf(row), changed: true };
    });
  }

  async delete(owner: string, id: string): Promise<boolean> {
    const gone = await this.db
      .deleteFrom('wire_automations')
      .where('owner', '=', owner)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst();
    return gone !== undefined;
  }

  /** Active schedules whose next occurrence has come, oldest first. */
  async due(now: Date, limit: number): Promise<AutomationRow[]> {
    return this.db
      .selectFrom('wire_automations')
      .selectAll()
      .where('status', '=', 'active')
      .where('trigger_type', '=', 'schedule')
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .limit(limit)
      .execute();
  }

  /**
   * Claims the occurrence `row` was read at: moves `next_run_at` from that value to the first
   * occurrence after `now`. Only one of any number of instances racing for it succeeds, and a
   * schedule that missed several occurrences (downtime) fires once.
   */
  async claim(row: AutomationRow, now: Date): Promise<boolean> {
    if (!row.next_run_at) return false;
    const claimed = await this.db
      .updateTable('wire_automations')
      .set({ next_run_at: nextOccurrence(scheduleOf(row), now), last_run_at: now })
      .where('id', '=', row.id)
      .where('status', '=', 'active')
      .where('next_run_at', '=', row.next_run_at)
      .returning('id')
      .executeTakeFirst();
    return claimed !== undefined;
  }

  /** Active automations triggered by deliveries of `source`, across owners. */
  async forSource(source: string): Promise<AutomationRow[]> {
    return this.db
      .selectFrom('wire_automations')
      .selectAll()
      .where('status', '=', 'active')
      .where('trigger_type', '=', 'webhook')
      .where('source', '=', source)
      .orderBy('created_at')
      .execute();
  }

  /** Automation `id`'s owner and the principal saved with it, whoever owns it; null when it is gone. */
  async ownerAndPrincipal(id: string): Promise<{ owner: string; principal: Principal } | null> {
    const row = await this.db
      .selectFrom('wire_automations')
      .select(['owner', 'principal'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? { owner: row.owner, principal: row.principal as Principal } : null;
  }

  async markRan(id: string, now: Date): Promise<void> {
    await this.db.updateTable('wire_automations').set({ last_run_at: now }).where('id', '=', id).execute();
  }
}

function triggerColumns(trigger: AutomationTrigger, status: 'active' | 'paused', now: Date) {
  if (trigger.type === 'webhook') {
    return {
      trigger_type: 'webhook' as const,
      source: trigger.source,
      cron: null,
      timezone: null,
      next_run_at: null,
    };
  }
  return {
    trigger_type: 'schedule' as const,
    source: null,
    cron: trigger.cron.trim(),
    timezone: trigger.timezone,
    next_run_at: status === 'active' ? nextOccurrence(trigger, now) : null,
  };
}

function scheduleOf(row: AutomationRow): Schedule {
  return { cron: row.cron ?? '', timezone: row.timezone ?? 'UTC' };
}

function viewOf(row: AutomationRow): AutomationView {
  const trigger: AutomationTrigger =
    row.trigger_type === 'webhook'
      ? { type: 'webhook', source: row.source ?? '' }
      : { type: 'schedule', ...scheduleOf(row) };
  return {
    id: row.id,
    name: row.name,
    prompt: row.prompt,
    status: row.status,
    trigger,
    nextRunAt: row.next_run_at ? new Date(row.next_run_at).toISOString() : null,
    lastRunAt: row.last_run_at ? new Date(row.last_run_at).toISOString() : null,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** The owner's automation, locked for the rest of the transaction; undefined when it has none of that id. */
function lockOwned(trx: Transaction<Database>, owner: string, id: string) {
  return trx
    .selectFrom('wire_automations')
    .selectAll()
    .where('owner', '=', owner)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}
