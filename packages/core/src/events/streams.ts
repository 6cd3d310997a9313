import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../http/logger.js';
import { formatSse, formatSseComment, formatSseRetry, SSE_HEADERS } from '../http/sse.js';
import { writeNowOrOnceBack } from '../store/availability.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import { lockUntilCommit } from '../store/locks.js';
import {
  EVENT_LOG_LENGTH,
  EVENTS_CHANNEL,
  type EventNotice,
  latestEventSeq,
  readEvents,
  type StoredEvent,
  sseNamesOf,
} from './log.js';

/** A stream's heartbeat (`: ping`), the contract's every 25 seconds: proxies close idle streams. */
export const EVENT_STREAM_PING_MS = 25_000;

export interface EventStreamHubOptions {
  logger: Logger;
  /** Concurrent streams per app across instances. Default 5. */
  maxStreamsPerApp?: number;
  /** Heartbeat interval. Default `EVENT_STREAM_PING_MS`. */
  pingMs?: number;
  /**
   * This instance's id in the store's heartbeat table: its slots are freed as soon as its
   * heartbeat stops (a killed instance), not when their own minute-long expiry lapses.
   */
  instanceId?: string;
  /**
   * Whether the key a stream was opened with still works: asked at each ping and when keys are
   * forgotten (`recheckKeys`); a stream whose key was revoked, or whose rotation overlap ended,
   * is closed. Without it, a stream lives on its key as it was when opened.
   */
  keyLive?: (keyId: string) => Promise<boolean>;
}

/** What an open stream is tied to besides its app. */
export interface OpenStreamOptions {
  /** The key it was opened with: the stream ends when the key stops working. */
  keyId?: string;
  /** The request's: the stream ends (its slot freed) when the client goes away, however early. */
  signal?: AbortSignal;
}

/**
 * A stream's claim on one of its app's slots lives this long past its last ping (a backstop: a
 * slot naming an instance is freed when that instance's heartbeat stops).
 */
const SLOT_TTL_MS = 60_000;
/** A client that lets more than this much output pile up (bytes) is dropped; it reconnects with Last-Event-ID. */
const MAX_BUFFERED_BYTES = 1_000_000;
/** How soon a client of a stopping instance reconnects (to a live one, behind a load balancer). */
const RECONNECT_AFTER_STOP_MS = 1000;
/** The response header naming the event id a stream starts after (what `Last-Event-ID` resumes). */
export const STREAM_POSITION_HEADER = 'service-last-event-id';

interface Subscriber {
  lastSeq: number;
  send(event: StoredEvent): void;
}

interface AppGroup {
  subscribers: Set<Subscriber>;
  fetching: Promise<void> | null;
  again: boolean;
}

export type OpenStreamResult =
  | { ok: true; response: Response }
  | { ok: false; reason: 'too_many_streams' }
  /** The instance is stopping: the client should come back in `retryAfterMs`, to a live one. */
  | { ok: false; reason: 'stopping'; retryAfterMs: number };

/**
 * The per-app event streams of one instance. Events are written to the store by whichever
 * instance caused them; a NOTIFY names the apps, and each instance reads the new events once per
 * app and writes them to its open streams. Replay after `Last-Event-ID` reads the same log.
 */
export class EventStreamHub {
  readonly #groups = new Map<string, AppGroup>();
  /** Ends each open stream (used when the instance shuts down). */
  readonly #enders = new Set<() => void>();
  /** Checks each open stream's key, by key id (the streams opened with it). */
  readonly #keyChecks = new Map<string, Set<() => void>>();
  readonly #db: Kysely<Database>;
  readonly #max: number;
  readonly #pingMs: number;
  #unlisten: (() => Promise<void>) | undefined;
  #closed = false;

  private constructor(
    store: Store,
    private readonly options: EventStreamHubOptions,
  ) {
    this.#db = store.db;
    this.#max = options.maxStreamsPerApp ?? 5;
    this.#pingMs = options.pingMs ?? EVENT_STREAM_PING_MS;
  }

  static async start(store: Store, options: EventStreamHubOptions): Promise<EventStreamHub> {
    const hub = new EventStreamHub(store, options);
    hub.#unlisten = await store.listen(EVENTS_CHANNEL, (payload) => hub.#onNotify(payload));
    return hub;
  }

  /** Stops listening and ends every open stream, so clients reconnect to a live instance. */
  async close(): Promise<void> {
    // Refused from now on: a client that reconnects at once must not pin the stopping server.
    this.#closed = true;
    await this.#unlisten?.();
    for (const end of [...this.#enders]) end();
  }

  /**
   * Checks the keys of the open streams again (all of them for null): the streams of a key that
   * no longer works end.
   */
  recheckKeys(keyIds: readonly string[] | null): void {
    const ids = keyIds ?? [...this.#keyChecks.keys()];
    for (const id of ids) for (const check of this.#keyChecks.get(id) ?? []) check();
  }

  /** Opens a stream for an app, replaying after `lastEventId` when given. */
  async open(
    appId: string,
    lastEventId: string | null,
    { keyId, signal }: OpenStreamOptions = {},
  ): Promise<OpenStreamResult> {
    const stopping = { ok: false, reason: 'stopping', retryAfterMs: RECONNECT_AFTER_STOP_MS } as const;
    if (this.#closed) return stopping;
    const slotId = await this.#claimSlot(appId);
    if (!slotId) return { ok: false, reason: 'too_many_streams' };
    // An id past the newest (a log restored from backup, another deployment's id) has nothing
    // to replay: the stream starts at the newest event, so new ones still flow.
    let latest: number;
    try {
      latest = await latestEventSeq(this.#db, appId);
    } catch (error) {
      // The store went away after the claim: the claim goes too, or it would hold a slot for a
      // minute that no stream uses.
      void this.#releaseSlot(slotId);
      throw error;
    }
    const replayFrom = parseEventId(lastEventId);
    // One further back than the log keeps starts where the log does: the position said in the
    // answer's header is where the replay really starts, so a client can tell it missed events.
    const lastSeq =
      replayFrom === null ? latest : Math.max(Math.min(replayFrom, latest), latest - EVENT_LOG_LENGTH);
    // Closed while the slot was claimed: nothing after this awaits, so close() sees this stream.
    if (this.#closed) {
      void this.#releaseSlot(slotId);
      return stopping;
    }

    const encoder = new TextEncoder();
    let cleanup = () => {};
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          let open = true;
          const write = (text: string) => {
            if (!open) return;
            // The queue's high-water mark is the limit: past it, what the client has not read
            // outweighs it (the socket's own buffers hold a little more on top).
            if ((controller.desiredSize ?? 0) < 0) {
              this.options.logger.warn('event stream dropped: client too slow', { app_id: appId });
              cleanup();
              controller.close();
              return;
            }
            controller.enqueue(encoder.encode(text));
          };
          const subscriber: Subscriber = {
            lastSeq,
            send: (event) => {
              const data = JSON.stringify(event.payload);
              for (const name of sseNamesOf(event.payload.kind)) {
                write(formatSse({ id: String(event.seq), event: name, data }));
              }
            },
          };
          /** Ends the stream without a word: its client went away, or its key stopped working. */
          const gone = () => {
            cleanup();
            try {
              controller.close();
            } catch {
              // Already closed or errored by its reader.
            }
          };
          /** Closes the stream once its key no longer works. */
          const checkKey = () => {
            const keyLive = this.options.keyLive;
            if (!keyId || !keyLive) return;
            keyLive(keyId).then(
              (live) => {
                if (!live && open) gone();
              },
              // The store is away: the key is checked again at the next ping.
              () => {},
            );
          };
          const ping = setInterval(() => {
            write(formatSseComment('ping'));
            void this.#renewSlot(slotId);
            // A missed notification costs at most one heartbeat interval.
            this.#fetch(appId);
            checkKey();
          }, this.#pingMs);
          ping.unref?.();
          // Ended by a stopping instance: the client is told to come back soon, to another one.
          const end = () => {
            if (!open) return;
            write(formatSseRetry(RECONNECT_AFTER_STOP_MS));
            cleanup();
            controller.close();
          };
          cleanup = () => {
            if (!open) return;
            open = false;
            clearInterval(ping);
            this.#enders.delete(end);
            signal?.removeEventListener('abort', gone);
            if (keyId) {
              const checks = this.#keyChecks.get(keyId);
              checks?.delete(checkKey);
              if (checks?.size === 0) this.#keyChecks.delete(keyId);
            }
            this.#leave(appId, subscriber);
            void this.#releaseSlot(slotId);
          };
          this.#enders.add(end);
          if (keyId) {
            const checks = this.#keyChecks.get(keyId) ?? new Set();
            checks.add(checkKey);
            this.#keyChecks.set(keyId, checks);
          }
          write(formatSseComment('connected'));
          this.#join(appId, subscriber);
          this.#fetch(appId);
          // The client gone, however early (before the body is read): the slot is freed.
          if (signal?.aborted) gone();
          else signal?.addEventListener('abort', gone, { once: true });
        },
        cancel: () => cleanup(),
      },
      { highWaterMark: MAX_BUFFERED_BYTES, size: (chunk) => chunk.byteLength },
    );
    // Where the stream starts: a client that has seen no event yet still knows what to resume
    // after, so events made while it reconnects are replayed rather than lost.
    const headers = { ...SSE_HEADERS, [STREAM_POSITION_HEADER]: String(lastSeq) };
    return { ok: true, response: new Response(body, { status: 200, headers }) };
  }

  /**
   * Delivers the events a notice carries to streams that are right before them; anything else
   * (a gap, a missed notice, apps named without their events) is read from the store.
   */
  #onNotify(payload: string | null): void {
    let notice: EventNotice;
    try {
      notice = payload === null ? { a: [...this.#groups.keys()] } : (JSON.parse(payload) as EventNotice);
    } catch {
      notice = { a: [...this.#groups.keys()] };
    }
    for (const appId of notice.a ?? []) this.#fetch(appId);
    for (const [appId, seq, payload] of notice.e ?? []) {
      const group = this.#groups.get(appId);
      if (!group) continue;
      for (const subscriber of group.subscribers) {
        if (seq === subscriber.lastSeq + 1 && !group.fetching) {
          subscriber.send({ appId, seq, payload });
          subscriber.lastSeq = seq;
        } else if (seq > subscriber.lastSeq) {
          this.#fetch(appId);
        }
      }
    }
  }

  #join(appId: string, subscriber: Subscriber): void {
    let group = this.#groups.get(appId);
    if (!group) {
      group = { subscribers: new Set(), fetching: null, again: false };
      this.#groups.set(appId, group);
    }
    group.subscribers.add(subscriber);
  }

  #leave(appId: string, subscriber: Subscriber): void {
    const group = this.#groups.get(appId);
    if (!group) return;
    group.subscribers.delete(subscriber);
    if (group.subscribers.size === 0 && !group.fetching) this.#groups.delete(appId);
  }

  /** Reads an app's new events once for all of its streams here; repeats if notified meanwhile. */
  #fetch(appId: string): void {
    const group = this.#groups.get(appId);
    if (!group) return;
    if (group.fetching) {
      group.again = true;
      return;
    }
    group.fetching = (async () => {
      do {
        group.again = false;
        let batch: StoredEvent[];
        do {
          if (group.subscribers.size === 0) break;
          const from = Math.min(...[...group.subscribers].map((s) => s.lastSeq));
          batch = await readEvents(this.#db, appId, from);
          for (const subscriber of group.subscribers) {
            for (const event of batch) {
              if (event.seq <= subscriber.lastSeq) continue;
              subscriber.send(event);
              subscriber.lastSeq = event.seq;
            }
          }
        } while (batch.length === EVENT_LOG_LENGTH);
      } while (group.again);
    })()
      .catch((error: unknown) => {
        this.options.logger.error('event stream read failed', {
          app_id: appId,
          error: error instanceof Error ? error.message : String(error),
        });
      })
      .finally(() => {
        group.fetching = null;
        if (group.subscribers.size === 0) this.#groups.delete(appId);
      });
  }

  /**
   * Claims one of the app's slots, or null when all are taken. Count and insert take turns on a
   * transaction lock of the app, so clients reconnecting at once (to any instance) never get
   * more than the limit between them.
   */
  async #claimSlot(appId: string): Promise<string | null> {
    return this.#db.transaction().execute(async (trx) => {
      await lockUntilCommit(trx, `event-streams:${appId}`);
      const now = new Date();
      await trx
        .deleteFrom('event_streams')
        .where('app_id', '=', appId)
        .where('expires_at', '<=', now)
        .execute();
      const live = await trx
        .selectFrom('event_streams')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('app_id', '=', appId)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (Number(live?.n ?? 0) >= this.#max) return null;
      const id = randomUUID();
      await trx
        .insertInto('event_streams')
        .values({
          id,
          app_id: appId,
          instance_id: this.options.instanceId ?? null,
          expires_at: new Date(now.getTime() + SLOT_TTL_MS),
        })
        .execute();
      return id;
    });
  }

  async #renewSlot(id: string): Promise<void> {
    await this.#db
      .updateTable('event_streams')
      .set({ expires_at: new Date(Date.now() + SLOT_TTL_MS) })
      .where('id', '=', id)
      .execute()
      .catch(() => {});
  }

  /**
   * Frees a slot. A release the store could not take (a blink) is tried again once it is back,
   * for as long as the slot would live, so an ended stream never keeps its app's slot.
   */
  async #releaseSlot(id: string): Promise<void> {
    await writeNowOrOnceBack(
      () => this.#db.deleteFrom('event_streams').where('id', '=', id).execute(),
      SLOT_TTL_MS,
    ).catch(() => {});
  }
}

/** A `Last-Event-ID` we issued: a non-negative integer. Anything else is ignored (no replay). */
function parseEventId(value: string | null): number | null {
  if (value === null || !/^\d{1,15}$/.test(value.trim())) return null;
  return Number(value.trim());
}
