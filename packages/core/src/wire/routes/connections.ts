/**
 * Connections: `GET /connections/catalog`, `GET /connections`, `POST /connections` (initiate,
 * with the host's `callbackUrl`), `GET /connections/:id` (what a client polls while the user is
 * away at the provider) and `DELETE /connections/:id`. The source is the composition's
 * `connections` (the host's own, or the platform's).
 *
 * @see docs/wire.md "Connections"
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { WireConnection, WireConnections } from '../connections.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { jsonBody, noFields, principalOf } from '../request.js';

const ID = /^[A-Za-z0-9_.:-]{1,128}$/;

const initiateSchema = z.object({
  provider: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a provider slug'),
  callbackUrl: z.url({ protocol: /^https?$/ }).max(2048),
});

export function connectionRoutes(ctx: WireContext, source: WireConnections): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  // Literal paths ahead of `:id`, so these words are never read as a connection id.
  app.get('/connections/catalog', async (c) => {
    const principal = await principalOf(ctx, c);
    return c.json({ providers: await source.catalog(principal) });
  });

  app.get('/connections', async (c) => {
    const principal = await principalOf(ctx, c);
    return c.json({ connections: await source.list(principal) });
  });

  app.post('/connections', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, initiateSchema);
    checkCallbackUrl(ctx, body.callbackUrl);
    const started = await source.initiate(principal, body);
    if (!started) throw new WireError('not_found', 'No such provider in the catalog.');
    ctx.audit.record(principal.subject, 'connection.initiated', {
      connectionId: started.connection.id,
      provider: body.provider,
    });
    return c.json(started, 201);
  });

  app.get('/connections/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const connection = ID.test(c.req.param('id')) ? await source.get(principal, c.req.param('id')) : null;
    if (!connection) throw new WireError('not_found', 'No such connection.');
    c.header('cache-control', 'no-store');
    return c.json({ connection });
  });

  app.delete('/connections/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    const connection: WireConnection | null = ID.test(id) ? await source.disconnect(principal, id) : null;
    if (!connection) throw new WireError('not_found', 'No such connection.');
    ctx.audit.record(principal.subject, 'connection.disconnected', { connectionId: id });
    return c.json({ connection });
  });

  return app;
}

/**
 * The flow comes back to the host only: with the host's public URL known, the callback must be
 * on its origin; always without credentials or a fragment.
 */
function checkCallbackUrl(ctx: WireContext, callbackUrl: string): void {
  const url = new URL(callbackUrl);
  if (url.username || url.password || url.hash) {
    throw new WireError('validation_failed', 'body.callbackUrl: must carry no credentials and no fragment.');
  }
  if (ctx.baseUrl && url.origin !== new URL(ctx.baseUrl).origin) {
    throw new WireError(
      'validation_failed',
      `body.callbackUrl: must be on the host's origin (${new URL(ctx.baseUrl).origin}).`,
    );
  }
}
