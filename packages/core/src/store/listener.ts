import pg from 'pg';
import type { EmbeddedDatabase } from './pglite-prepared.js';

/**
 * Called with each notification's payload on a channel, or with `null` when notifications may
 * have been missed (the listening connection was lost and is back), so the listener re-reads.
 */
export type NotificationHandler = (payload: string | null) => void;

export interface Listener {
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /** Cuts the connection without a goodbye (for a `close` that a hung server keeps waiting). */
  cut(): void;
}

/** Closes a client's socket at once, without the goodbye a hung server would never answer. */
export function cutConnection(client: pg.ClientBase): void {
  (client as pg.Client).connection.stream.destroy();
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`Invalid notification channel name: ${channel}`);
}

/** LISTEN on an embedded PGlite: its one backend delivers its own NOTIFYs. */
export function createPGliteListener(db: EmbeddedDatabase): Listener {
  return {
    async listen(channel, handler) {
      checkChannel(channel);
      const unsubscribe = await db.listen(channel, (payload) => handler(payload));
      return async () => {
        await unsubscribe();
      };
    },
    async close() {},
    cut() {},
  };
}

/** What `pg` fails a statement with once its `query_timeout` passes. */
const QUERY_TIMED_OUT = 'Query read timeout';

/** `application_name` of the LISTEN connection, as `pg_stat_activity` shows it. */
export const LISTENER_APPLICATION_NAME = 'service-listener';

export interface PostgresListenerOptions {
  /** How long one connection attempt may take. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** First delay before reconnecting; doubles per failed attempt up to `maxRetryMs`. Default 100 ms. */
  minRetryMs?: number;
  /** Longest delay between reconnection attempts. Default 2000 ms. */
  maxRetryMs?: number;
  /**
   * How long a LISTEN or UNLISTEN may go unanswered before the connection counts as lost (and is
   * cut and re-opened): a server that hangs does not close it. Default 10000 ms.
   */
  queryTimeoutMs?: number;
}

/**
 * LISTEN on Postgres over one dedicated connection per store (a pooled connection would lose its
 * LISTENs when returned). Its errors are always handled: a lost connection (a server restart, a
 * failover, a dropped network) is re-opened with backoff, every channel is LISTENed again, and
 * each handler then gets `null`, since notifications sent meanwhile are gone.
 */
export function createPostgresListener(url: string, options: PostgresListenerOptions = {}): Listener {
  const minRetryMs = options.minRetryMs ?? 100;
  const maxRetryMs = options.maxRetryMs ?? 2000;
  const handlers = new Map<string, Set<NotificationHandler>>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  /** The connection `close` is seeing off. */
  let ending: pg.Client | undefined;
  let retryMs = minRetryMs;
  /** Set when a live connection was lost: whoever connects next tells the handlers. */
  let missedNotifications = false;

  const dispatch = (channel: string, payload: string | null) => {
    for (const handler of handlers.get(channel) ?? []) {
      try {
        handler(payload);
      } catch {
        // A failing handler must not stop the others.
      }
    }
  };

  const scheduleReconnect = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      reconnect();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, maxRetryMs);
  };

  const connect = (): Promise<pg.Client> => {
    connecting ??= (async () => {
      const next = new pg.Client({
        connectionString: url,
        // Named, so an operator (and a test) can tell it from the pool's connections.
        application_name: LISTENER_APPLICATION_NAME,
        keepAlive: true,
        keepAliveInitialDelayMillis: 5000,
        connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
        query_timeout: options.queryTimeoutMs ?? 10_000,
      });
      next.on('notification', (message) => dispatch(message.channel, message.payload ?? ''));
      let lost = false;
      const onLost = () => {
        if (lost) return;
        lost = true;
        next.removeAllListeners('notification');
        next.end().catch(() => {});
        // Lost while connecting: the attempt fails and its caller retries.
        if (client !== next) return;
        client = undefined;
        missedNotifications = true;
        scheduleReconnect();
      };
      // Never unhandled: an 'error' event without a listener would end the process.
      next.on('error', onLost);
      next.on('end', onLost);
      try {
        await next.connect();
        for (const channel of handlers.keys()) await ask(next, `listen ${channel}`);
      } catch (error) {
        onLost();
        throw error;
      }
      if (lost) throw new Error('Connection terminated unexpectedly');
      if (closed) {
        await next.end().catch(() => {});
        throw new Error('The listener is closed');
      }
      client = next;
      retryMs = minRetryMs;
      if (missedNotifications) {
        missedNotifications = false;
        for (const channel of handlers.keys()) dispatch(channel, null);
      }
      return next;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  /** A statement on the connection; one left unanswered cuts it, so it counts as lost. */
  const ask = async (on: pg.Client, text: string): Promise<void> => {
    try {
      await on.query(text);
    } catch (error) {
      if (error instanceof Error && error.message === QUERY_TIMED_OUT) cutConnection(on);
      throw error;
    }
  };

  const reconnect = () => {
    if (closed || client) return;
    connect().catch(scheduleReconnect);
  };

  return {
    async listen(channel, handler) {
      checkChannel(channel);
      let set = handlers.get(channel);
      const fresh = !set;
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
      }
      set.add(handler);
      const forget = async () => {
        set.delete(handler);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          if (client) await ask(client, `unlisten ${channel}`).catch(() => {});
        }
      };
      try {
        const live = client ?? (await connect());
        if (fresh && live === client) await ask(live, `listen ${channel}`);
      } catch (error) {
        await forget();
        throw error;
      }
      return forget;
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      ending = client;
      client = undefined;
      await ending?.end().catch(() => {});
    },
    cut() {
      if (ending) cutConnection(ending);
    },
  };
}
