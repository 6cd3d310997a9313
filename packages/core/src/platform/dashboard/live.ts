import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { formatUsd } from '../../billing/payments/processor.js';
import { formatSse, formatSseComment, formatSseRetry, SSE_HEADERS } from '../../http/sse.js';
import { SESSION_COOKIE } from '../../identity/sessions.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { requireSession } from '../internal/session.js';

/** A stream ends after this long and the browser reconnects: no connection outlives a deploy for long. */
const STREAM_LIFETIME_MS = 5 * 60_000;
const HEARTBEAT_MS = 15_000;

/**
 * `GET /dashboard/live`: what the dashboard shows live, as server-sent events for the signed-in
 * user's workspace: `balance` (`{ micros, formatted }`) and `connections` (`[{ id, provider,
 * status }]`), each sent first and again whenever it changes. The stream looks every `pollMs`
 * on this instance, so a change made through any instance (a purchase credited by a webhook, a
 * metered call, a connection refreshed) shows within that time. Each look checks the session and
 * the membership first: the stream ends once the person signs out or leaves the workspace.
 */
export function liveRoutes(
  ctx: PlatformContext,
  options: { pollMs: number; stopping: AbortSignal },
): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  app.get('/dashboard/live', async (c) => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    const cookie = getCookie(c, SESSION_COOKIE);
    const signal = c.req.raw.signal;
    const encoder = new TextEncoder();
    let timer: NodeJS.Timeout | undefined;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const started = Date.now();
        let lastBeat = started;
        let sent = { balance: '', connections: '' };
        let closed = false;
        const close = () => {
          if (closed) return;
          closed = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', close);
          options.stopping.removeEventListener('abort', close);
          controller.close();
        };
        // The browser left, or the platform is stopping (its EventSource reconnects elsewhere).
        signal.addEventListener('abort', close, { once: true });
        options.stopping.addEventListener('abort', close, { once: true });
        const write = (text: string) => controller.enqueue(encoder.encode(text));
        const look = async () => {
          if (closed) return;
          try {
            // Only while the person may still see them: a stream ends once they sign out (in
            // another tab, say) or leave the workspace, not when its lifetime runs out.
            const [session, role] = await Promise.all([
              ctx.sessions.resolve(cookie),
              ctx.accounts.roleIn(user.tenantId, user.userId),
            ]);
            if (!session || !role) return close();
            const micros = await ctx.balances.micros(user.tenantId);
            const balance = JSON.stringify({ micros, formatted: formatUsd(micros) });
            const rows = await ctx.connections.list(user.tenantId);
            const connections = JSON.stringify(
              rows.map((row) => ({ id: row.id, provider: row.provider, status: row.status })),
            );
            if (closed) return;
            if (balance !== sent.balance) write(formatSse({ event: 'balance', data: balance }));
            if (connections !== sent.connections)
              write(formatSse({ event: 'connections', data: connections }));
            sent = { balance, connections };
          } catch (error) {
            // A store blink: say nothing this round and look again next time.
            ctx.logger.warn('dashboard live read failed', {
              error: error instanceof Error ? error.name : 'unknown',
            });
          }
          const now = Date.now();
          if (now - lastBeat >= HEARTBEAT_MS) {
            write(formatSseComment('keep-alive'));
            lastBeat = now;
          }
          if (now - started >= STREAM_LIFETIME_MS) return close();
          timer = setTimeout(look, options.pollMs);
        };
        write(formatSseRetry(3000));
        if (options.stopping.aborted) return close();
        void look();
      },
      cancel() {
        clearTimeout(timer);
      },
    });
    return new Response(stream, { headers: SSE_HEADERS });
  });
  return app;
}
