import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * Called with each notification's payload on a channel, or with `null` when notifications may
 * have been missed (the listening connection was lost and is back), so the listener re-reads.
 */
export type NotificationHandler = (payload: string | null) => void;

export interface Listener {
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`Invalid notification channel name: ${channel}`);
}

/** LISTEN on an embedded PGlite: its one backend delivers its own NOTIFYs. */
export function createPGliteListener(db: PGlite): Listener {
  return {
    async listen(channel, handler) {
      checkChannel(channel);
      const unsubscribe = await db.listen(channel, (payload) => handler(payload));
      return async () => {
        await unsubscribe();
      };
    },
    async close() {},
  };
}

/**
 * LISTEN on Postgres over one dedicated connection per store (a pooled connection would lose its
 * LISTENs when returned). A lost connection is re-opened with backoff; handlers then get `null`.
 */
export function createPostgresListener(url: string): Listener {
  const handlers = new Map<string, Set<NotificationHandler>>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let retryMs = 100;

  const dispatch = (channel: string, payload: string | null) => {
    for (const handler of handlers.get(channel) ?? []) {
      try {
        handler(payload);
      } catch {
        // A failing handler must not stop the others.
      }
    }
  };

  const connect = (): Promise<pg.Client> => {
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: url });
      next.on('notification', (message) => dispatch(message.channel, message.payload ?? ''));
      const lost = () => {
        if (client !== next) return;
        client = undefined;
        next.removeAllListeners('notification');
        next.end().catch(() => {});
        if (!closed) setTimeout(reconnect, retryMs).unref();
        retryMs = Math.min(retryMs * 2, 5000);
      };
      next.on('error', lost);
      next.on('end', lost);
      await next.connect();
      for (const channel of handlers.keys()) await next.query(`listen ${channel}`);
      client = next;
      retryMs = 100;
      return next;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const reconnect = () => {
    if (closed || client) return;
    connect()
      .then(() => {
        for (const channel of handlers.keys()) dispatch(channel, null);
      })
      .catch(() => {
        if (!closed) setTimeout(reconnect, retryMs).unref();
        retryMs = Math.min(retryMs * 2, 5000);
      });
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
      const live = client ?? (await connect());
      if (fresh && live === client) await live.query(`listen ${channel}`);
      return async () => {
        set.delete(handler);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          await client?.query(`unlisten ${channel}`).catch(() => {});
        }
      };
    },
    async close() {
      closed = true;
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
