import { type Kysely, sql, type Transaction } from 'kysely';
import { LEGACY_EVENT_ALIASES, type ServiceEvent, type ServiceEventKind } from '../schemas/events.js';
import type { Database } from '../store/database.js';

/** Events kept per app for `Last-Event-ID` replay. @see platform-spec.md "Limits" */
export const EVENT_LOG_LENGTH = 100;
/** The NOTIFY channel that tells every instance which apps have new events. */
export const EVENTS_CHANNEL = 'service_app_events';
/** Old events are trimmed once an app has this many more than it keeps (reads never look past 100). */
const TRIM_SLACK = 20;
/** Postgres refuses NOTIFY payloads of 8000 bytes or more: notices are cut below that. */
const MAX_NOTICE_BYTES = 7000;

/** An event for one app, before it has its number. */
export interface EventDraft<K extends ServiceEventKind = ServiceEventKind> {
  appId: string;
  kind: K;
  fields: Omit<Extract<ServiceEvent, { kind: K }>, 'id' | 'at' | 'kind'>;
}

export interface StoredEvent {
  appId: string;
  seq: number;
  payload: ServiceEvent;
}

/**
 * Appends events to their apps' logs inside the caller's transaction: numbers them per app (under
 * the app row's lock, so numbers follow commit order within an app), trims each log to its last
 * 100 events, and NOTIFYs the app ids, which Postgres delivers only if the transaction commits.
 */
export async function appendEvents(
  trx: Transaction<Database>,
  drafts: EventDraft[],
  at = new Date(),
): Promise<StoredEvent[]> {
  if (drafts.length === 0) return [];
  const byApp = new Map<string, EventDraft[]>();
  for (const draft of drafts) {
    const list = byApp.get(draft.appId);
    if (list) list.push(draft);
    else byApp.set(draft.appId, [draft]);
  }
  const stored: StoredEvent[] = [];
  // A fixed order of app-row locks keeps concurrent emitters from deadlocking.
  for (const appId of [...byApp.keys()].sort()) {
    const list = byApp.get(appId)!;
    const app = await trx
      .updateTable('apps')
      .set({ event_seq: sql`event_seq + ${list.length}` })
      .where('id', '=', appId)
      .returning('event_seq')
      .executeTakeFirst();
    if (!app) continue; // The app is gone; its events have no reader.
    const first = app.event_seq - list.length + 1;
    list.forEach((draft, i) => {
      const seq = first + i;
      const payload = {
        id: String(seq),
        at: at.toISOString(),
        kind: draft.kind,
        ...draft.fields,
      } as ServiceEvent;
      stored.push({ appId, seq, payload });
    });
    // Trim now and then, not on every append: reads never reach past the last 100 anyway.
    if (
      app.event_seq > EVENT_LOG_LENGTH &&
      Math.floor(app.event_seq / TRIM_SLACK) !== Math.floor(first / TRIM_SLACK)
    ) {
      await trx
        .deleteFrom('app_events')
        .where('app_id', '=', appId)
        .where('seq', '<=', app.event_seq - EVENT_LOG_LENGTH)
        .execute();
    }
  }
  const kept = stored.filter((event) => event.seq > (latestOf(stored, event.appId) ?? 0) - EVENT_LOG_LENGTH);
  if (kept.length > 0) {
    await trx
      .insertInto('app_events')
      .values(
        kept.map((event) => ({
          app_id: event.appId,
          seq: event.seq,
          kind: event.payload.kind,
          payload: JSON.stringify(event.payload),
          created_at: at,
        })),
      )
      .execute();
  }
  for (const notice of eventNotices(stored)) {
    await sql`select pg_notify(${EVENTS_CHANNEL}, ${notice})`.execute(trx);
  }
  return stored;
}

/**
 * A NOTIFY on the events channel: the new events themselves when they fit, so instances deliver
 * them without reading the store, and the ids of apps whose events did not fit (those are read).
 */
export interface EventNotice {
  /** `[appId, seq, payload]` of new events, in order within each app. */
  e?: Array<[string, number, ServiceEvent]>;
  /** Apps with new events to read from the store. */
  a?: string[];
}

/** Cuts the events of a transaction into notices that fit a NOTIFY payload. */
export function eventNotices(events: StoredEvent[]): string[] {
  const notices: string[] = [];
  let current: Array<[string, number, ServiceEvent]> = [];
  let size = 0;
  const tooBig = new Set<string>();
  const flush = () => {
    if (current.length > 0) notices.push(JSON.stringify({ e: current } satisfies EventNotice));
    current = [];
    size = 0;
  };
  for (const event of events) {
    const entry: [string, number, ServiceEvent] = [event.appId, event.seq, event.payload];
    const bytes = Buffer.byteLength(JSON.stringify(entry)) + 1;
    // An app whose event cannot travel is read from the store: none of its later events travel
    // either, so a reader never gets them out of order.
    if (tooBig.has(event.appId) || bytes > MAX_NOTICE_BYTES - 16) {
      tooBig.add(event.appId);
      continue;
    }
    if (size + bytes > MAX_NOTICE_BYTES - 16) flush();
    current.push(entry);
    size += bytes;
  }
  flush();
  const ids = [...tooBig];
  for (let i = 0; i < ids.length; i += 150)
    notices.push(JSON.stringify({ a: ids.slice(i, i + 150) } satisfies EventNotice));
  return notices;
}

function latestOf(events: StoredEvent[], appId: string): number | undefined {
  let latest: number | undefined;
  for (const event of events)
    if (event.appId === appId && (latest === undefined || event.seq > latest)) latest = event.seq;
  return latest;
}

/**
 * An app's events numbered after `afterSeq`, oldest first, within the last 100 of the app (rows
 * older than that may linger until the next trim; they are never read).
 */
export async function readEvents(
  db: Kysely<Database>,
  appId: string,
  afterSeq: number,
): Promise<StoredEvent[]> {
  const rows = await db
    .selectFrom('app_events')
    .select(['seq', 'payload'])
    .where('app_id', '=', appId)
    .where('seq', '>', afterSeq)
    .where('seq', '>', (eb) =>
      eb
        .selectFrom('apps')
        .select(sql<number>`event_seq - ${EVENT_LOG_LENGTH}`.as('oldest'))
        .where('id', '=', appId),
    )
    .orderBy('seq')
    .limit(EVENT_LOG_LENGTH)
    .execute();
  return rows.map((row) => ({ appId, seq: row.seq, payload: row.payload as unknown as ServiceEvent }));
}

/** The number of the app's latest event (0 before any). */
export async function latestEventSeq(db: Kysely<Database>, appId: string): Promise<number> {
  const row = await db.selectFrom('apps').select('event_seq').where('id', '=', appId).executeTakeFirst();
  return row?.event_seq ?? 0;
}

/** The SSE event names an event is sent under: its kind, then its legacy alias if it has one. */
export function sseNamesOf(kind: ServiceEventKind): string[] {
  const alias = LEGACY_EVENT_ALIASES[kind];
  return alias ? [kind, alias] : [kind];
}
