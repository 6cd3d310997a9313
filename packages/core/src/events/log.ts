import { type Kysely, sql, type Transaction } from 'kysely';
import { LEGACY_EVENT_ALIASES, type ServiceEvent, type ServiceEventKind } from '../schemas/events.js';
import type { Database } from '../store/database.js';
import { type Notice, sendNotices } from '../store/notices.js';

/** Events kept per app for `Last-Event-ID` replay. */
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
 * the app rows' locks, so numbers follow commit order within an app), trims each log now and then
 * (reads never reach past the last 100), and NOTIFYs them, which Postgres delivers only if the
 * transaction commits. With `notices`, the NOTIFYs are collected for the caller to send.
 */
export async function appendEvents(
  trx: Transaction<Database>,
  drafts: EventDraft[],
  at = new Date(),
  notices?: Notice[],
): Promise<StoredEvent[]> {
  if (drafts.length === 0) return [];
  const byApp = new Map<string, EventDraft[]>();
  for (const draft of drafts) {
    const list = byApp.get(draft.appId);
    if (list) list.push(draft);
    else byApp.set(draft.appId, [draft]);
  }
  const latest = await bumpSequences(trx, byApp);
  const stored: StoredEvent[] = [];
  for (const [appId, list] of byApp) {
    const last = latest.get(appId);
    if (last === undefined) continue; // The app is gone; its events have no reader.
    const first = last - list.length + 1;
    list.forEach((draft, i) => {
      const seq = first + i;
      const payload = {
        id: String(seq),
        at: at.toISOString(),
        kind: draft.kind,
        ...draft.fields,
      } as ServiceEvent;
      if (seq > last - EVENT_LOG_LENGTH) stored.push({ appId, seq, payload });
    });
    if (last > EVENT_LOG_LENGTH && Math.floor(last / TRIM_SLACK) !== Math.floor((first - 1) / TRIM_SLACK)) {
      await trx
        .deleteFrom('app_events')
        .where('app_id', '=', appId)
        .where('seq', '<=', last - EVENT_LOG_LENGTH)
        .execute();
    }
  }
  if (stored.length > 0) {
    await trx
      .insertInto('app_events')
      .values(
        stored.map((event) => ({
          app_id: event.appId,
          seq: event.seq,
          kind: event.payload.kind,
          payload: JSON.stringify(event.payload),
          created_at: at,
        })),
      )
      .execute();
  }
  const own = eventNotices(stored).map((payload): Notice => [EVENTS_CHANNEL, payload]);
  if (notices) notices.push(...own);
  else await sendNotices(trx, own);
  return stored;
}

/**
 * Moves each app's event counter by its number of new events; answers each app's new last
 * number. One app: one UPDATE. Several: their rows are locked in id order first (so concurrent
 * emitters cannot deadlock), then moved by one UPDATE.
 */
async function bumpSequences(
  trx: Transaction<Database>,
  byApp: Map<string, EventDraft[]>,
): Promise<Map<string, number>> {
  const appIds = [...byApp.keys()].sort();
  if (appIds.length === 1) {
    const appId = appIds[0]!;
    const row = await trx
      .updateTable('apps')
      .set({ event_seq: sql`event_seq + ${byApp.get(appId)!.length}` })
      .where('id', '=', appId)
      .returning(['id', 'event_seq'])
      .executeTakeFirst();
    return new Map(row ? [[row.id, row.event_seq]] : []);
  }
  await trx.selectFrom('apps').select('id').where('id', 'in', appIds).orderBy('id').forUpdate().execute();
  const counts = sql.join(appIds.map((id) => sql`(${id}::uuid, ${byApp.get(id)!.length}::bigint)`));
  const rows = await sql<{ id: string; event_seq: number }>`
    update apps set event_seq = apps.event_seq + v.n
    from (values ${counts}) as v(id, n)
    where apps.id = v.id
    returning apps.id, apps.event_seq`.execute(trx);
  return new Map(rows.rows.map((row) => [row.id, Number(row.event_seq)]));
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
