import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { integrationDocsOf, integrationLogoOf } from '../../catalog/icons.js';
import type { EndUserScope } from '../../connections/end-user-connections.js';
import { canonicalError, flatError, NO_STORE, nestedError } from '../../http/errors.js';
import { isHostUserId } from '../../http/input-guard.js';
import { SSE_HEADERS } from '../../http/sse.js';
import { bearerToken } from '../../identity/bearer.js';
import type { KeyPrincipal } from '../../identity/key-store.js';
import { KEY_PREFIX } from '../../identity/keys.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { credentialFailed, credentialsBlocked, FAILED_CREDENTIALS_MESSAGE } from '../internal/rate-limit.js';

const INVALID = 'Missing or invalid Bearer token';

/**
 * The runtime API of deployed tools: their connections and their event stream. App Keys only: a
 * token not starting with `service_sk_` (a JWT included) is refused before any verification, and
 * Connection and CLI keys, which share the prefix, are refused too (the app id is needed).
 */
export function runtimeRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  /**
   * The App Key of the request; null when there is none or it fails, or the seconds to wait when
   * the caller's address has sent too many that failed (counted across instances).
   */
  const appKeyOf = async (
    c: Context<PlatformEnv>,
  ): Promise<(KeyPrincipal & { appId: string }) | null | { retryAfter: number }> => {
    const token = bearerToken(c.req.header('authorization'));
    if (!token?.startsWith(KEY_PREFIX)) return null;
    const blocked = credentialsBlocked(ctx, c);
    if (blocked !== null) return { retryAfter: blocked };
    const key = await ctx.keys.authenticate(token);
    if (key?.kind === 'app' && key.appId) return { ...key, appId: key.appId };
    const wait = await credentialFailed(ctx, c);
    return wait === null ? null : { retryAfter: wait };
  };
  const throttled = (retryAfter: number, shape: 'nested' | 'canonical') =>
    shape === 'nested'
      ? nestedError(429, FAILED_CREDENTIALS_MESSAGE, { 'retry-after': String(retryAfter) })
      : canonicalError(
          429,
          'rate_limited',
          FAILED_CREDENTIALS_MESSAGE,
          { retry_after: retryAfter },
          { 'retry-after': String(retryAfter) },
        );

  app.get('/api/deployments/me/connections', async (c) => {
    c.set('errorShape', 'nested');
    const key = await appKeyOf(c);
    if (!key) return nestedError(401, INVALID);
    if ('retryAfter' in key) return throttled(key.retryAfter, 'nested');
    const bound = await ctx.connections.forRuntime(ctx.baseUrl, key.appId);
    // Links on the catalog's rule, as /api/integrations answers them: the integration's own, else
    // the platform's generated logo and docs page (connections sit below the catalog's layer).
    const connections = bound.map((row) => ({
      ...row,
      logo_url: integrationLogoOf(ctx.baseUrl, { provider: row.slug, logo_url: row.logo_url }),
      docs_url: integrationDocsOf(ctx.baseUrl, { provider: row.slug, docs_url: row.docs_url }),
    }));
    return c.json({ connections }, 200, { 'cache-control': 'no-store' });
  });

  app.get('/api/deployments/me/events', async (c) => {
    c.set('errorShape', 'canonical');
    const key = await appKeyOf(c);
    if (!key) return nestedError(401, INVALID);
    if ('retryAfter' in key) return throttled(key.retryAfter, 'canonical');
    // HEAD (answered by this GET route, its body dropped) opens no stream: it would hold a slot.
    if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers: SSE_HEADERS });
    const opened = await ctx.events.open(key.appId, c.req.header('last-event-id') ?? null, {
      keyId: key.keyId,
      signal: c.req.raw.signal,
    });
    if (!opened.ok && opened.reason === 'stopping') {
      // `Connection: close` too, so a keep-alive socket does not hold the stopping server open.
      const seconds = Math.ceil(opened.retryAfterMs / 1000);
      return canonicalError(
        503,
        'service_unavailable',
        'This instance is shutting down; reconnect shortly',
        { retry_after: seconds },
        { 'retry-after': String(seconds), connection: 'close' },
      );
    }
    if (!opened.ok) {
      return canonicalError(
        429,
        'rate_limit_sse_streams',
        'Too many concurrent SSE streams for this app (5 at most); close one or retry later',
        { retry_after: 5 },
        { 'retry-after': '5' },
      );
    }
    return opened.response;
  });

  // A host app's own users' connections (the wire's `cloud` source): App Key only, flat errors.
  /** The App Key of a request to these routes, or the refusal to answer. */
  const appOf = async (c: Context<PlatformEnv>) => {
    c.set('errorShape', 'flat');
    const key = await appKeyOf(c);
    if (!key) return flatError(401, INVALID);
    if ('retryAfter' in key) {
      return flatError(429, FAILED_CREDENTIALS_MESSAGE, {}, { 'retry-after': String(key.retryAfter) });
    }
    return key;
  };
  const endUserScope = async (c: Context<PlatformEnv>): Promise<EndUserScope | Response> => {
    const key = await appOf(c);
    if (key instanceof Response) return key;
    const user = c.req.param('user') ?? '';
    if (!isHostUserId(user)) {
      throw new PlatformError(400, 'The user must be 1 to 256 characters, without control characters', {
        code: 'INVALID_REQUEST',
      });
    }
    return { tenantId: key.tenantId, appId: key.appId, endUser: user };
  };
  const users = ctx.endUserConnections;

  app.get('/api/deployments/me/connectors', async (c) => {
    const key = await appOf(c);
    if (key instanceof Response) return key;
    return c.json({ connectors: await users.catalog() }, 200, NO_STORE);
  });

  app.get('/api/deployments/me/users/:user/connections', async (c) => {
    const scope = await endUserScope(c);
    if (scope instanceof Response) return scope;
    return c.json({ connections: await users.list(scope) }, 200, NO_STORE);
  });

  app.post('/api/deployments/me/users/:user/connections', async (c) => {
    const scope = await endUserScope(c);
    if (scope instanceof Response) return scope;
    const body = await readJsonBody(c, initiateSchema);
    return c.json(await users.initiate(scope, body), 201, NO_STORE);
  });

  app.get('/api/deployments/me/users/:user/connections/:id', async (c) => {
    const scope = await endUserScope(c);
    if (scope instanceof Response) return scope;
    return c.json({ connection: await users.get(scope, c.req.param('id')) }, 200, NO_STORE);
  });

  app.delete('/api/deployments/me/users/:user/connections/:id', async (c) => {
    const scope = await endUserScope(c);
    if (scope instanceof Response) return scope;
    return c.json({ connection: await users.disconnect(scope, c.req.param('id')) }, 200, NO_STORE);
  });

  return app;
}

const initiateSchema = z.strictObject({
  provider: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be an integration slug'),
  callbackUrl: z.string().max(2048),
});
