import { type Context, Hono } from 'hono';
import { z } from 'zod';
import {
  bindConnection,
  ConnectionError,
  type ConnectionRow,
  createConnection,
  getConnection,
  listConnections,
  mintConnectionKey,
  revokeConnection,
  unbindConnection,
  updateConnection,
} from '../../connections/index.js';
import { flatError } from '../../http/errors.js';
import { bearerToken } from '../../identity/bearer.js';
import { KEY_PREFIX } from '../../identity/keys.js';
import { CONNECTION_STATUSES } from '../../schemas/connections.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { withIdempotency } from '../internal/idempotency.js';
import { readJsonBody } from '../internal/json-body.js';
import { canWrite, cookieWriteRefusal, sessionCaller } from '../internal/session.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'must be an integration slug');
const metadata = z
  .record(z.string(), z.unknown())
  .refine((value) => JSON.stringify(value).length <= 16_384, 'must be at most 16 KiB of JSON');
const credential = z.record(z.string(), z.unknown());

const createSchema = z.strictObject({
  provider: slug,
  profile: z.string().min(1).max(64).optional(),
  display_name: z.string().trim().min(1).max(200).optional(),
  credential: credential.optional(),
  metadata: metadata.optional(),
  exclusive: z.boolean().optional(),
  app_id: z.string().max(64).optional(),
});

const patchSchema = z.strictObject({
  status: z.enum(CONNECTION_STATUSES).optional(),
  display_name: z.string().trim().min(1).max(200).optional(),
  metadata: metadata.optional(),
  credential: credential.optional(),
  error_message: z.string().max(2000).nullable().optional(),
  setup_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .nullable()
    .optional(),
});

const bindSchema = z.strictObject({ connection_id: z.string().max(64) });
const keySchema = z.strictObject({ name: z.string().trim().min(1).max(100).optional() });

/** Who is changing connections: a dashboard user, or a deployed tool with its App Key. */
type Caller = { tenantId: string; appId: string | null; via: 'session' | 'app_key' };

/**
 * Connections and their bindings, keys and status. `POST /api/connections` takes an App Key (the
 * connection is made for, and bound to, the key's app) or a session; the rest takes a session
 * (owners and members change, viewers read). Flat error bodies.
 *
 * @see platform-spec.md "Endpoint matrix", docs/api/connections.md
 */
export function connectionRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const deps = { db: ctx.db, sealer: ctx.sealer, keys: ctx.keys };

  /** The caller, or the flat error to answer; `write` refuses viewers and unsafe cookie writes. */
  const callerOf = async (
    c: Context<PlatformEnv>,
    options: { appKey: boolean; write: boolean },
  ): Promise<Caller | Response> => {
    c.set('errorShape', 'flat');
    const token = bearerToken(c.req.header('authorization'));
    if (token && options.appKey && token.startsWith(KEY_PREFIX)) {
      const key = await ctx.keys.authenticate(token);
      if (key?.kind !== 'app' || !key.appId) return flatError(401, 'Unauthorized');
      return { tenantId: key.tenantId, appId: key.appId, via: 'app_key' };
    }
    const user = await sessionCaller(ctx, c);
    if (!user) return flatError(401, 'Unauthorized');
    if (options.write) {
      const refusal = cookieWriteRefusal(ctx, c);
      if (refusal === 'cross_origin') return flatError(403, 'Cross-origin request refused');
      if (refusal === 'not_json') return flatError(415, 'Content-Type must be application/json');
      if (!canWrite(user.role)) return flatError(403, 'Forbidden: viewers cannot change connections');
    }
    return { tenantId: user.tenantId, appId: null, via: 'session' };
  };

  const fail = (error: unknown) => {
    if (error instanceof ConnectionError) return flatError(error.status, error.message, { code: error.code });
    throw error;
  };

  app.post('/api/connections', async (c) => {
    const caller = await callerOf(c, { appKey: true, write: true });
    if (caller instanceof Response) return caller;
    const body = await readJsonBody(c, createSchema);
    if (!body.ok) return flatError(body.status, body.message, { code: 'INVALID_REQUEST' });
    if (caller.via === 'app_key' && body.data.app_id && body.data.app_id !== caller.appId) {
      return flatError(403, 'An App Key makes connections for its own app only', { code: 'FORBIDDEN' });
    }
    return withIdempotency(ctx, c, caller.tenantId, 'POST /api/connections', body.data, async () => {
      try {
        const row = await createConnection(deps, {
          tenantId: caller.tenantId,
          provider: body.data.provider,
          profile: body.data.profile,
          displayName: body.data.display_name,
          credential: body.data.credential,
          metadata: body.data.metadata,
          exclusive: body.data.exclusive,
          appId: caller.appId ?? body.data.app_id ?? null,
        });
        return { status: 201, body: { connection: publicConnection(row) } };
      } catch (error) {
        if (error instanceof ConnectionError) {
          return { status: error.status, body: { message: error.message, code: error.code } };
        }
        throw error;
      }
    });
  });

  app.get('/api/connections', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: false });
    if (caller instanceof Response) return caller;
    const rows = await listConnections(ctx.db, caller.tenantId);
    return c.json({ connections: rows.map(publicConnection) }, 200, { 'cache-control': 'no-store' });
  });

  app.get('/api/connections/:id', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: false });
    if (caller instanceof Response) return caller;
    try {
      const row = await getConnection(ctx.db, caller.tenantId, c.req.param('id'));
      return c.json({ connection: publicConnection(row) }, 200, { 'cache-control': 'no-store' });
    } catch (error) {
      return fail(error);
    }
  });

  app.patch('/api/connections/:id', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: true });
    if (caller instanceof Response) return caller;
    const body = await readJsonBody(c, patchSchema);
    if (!body.ok) return flatError(body.status, body.message, { code: 'INVALID_REQUEST' });
    try {
      const row = await updateConnection(deps, caller.tenantId, c.req.param('id'), {
        status: body.data.status,
        displayName: body.data.display_name,
        metadata: body.data.metadata,
        credential: body.data.credential,
        errorMessage: body.data.error_message,
        setupUrl: body.data.setup_url,
      });
      return c.json({ connection: publicConnection(row) });
    } catch (error) {
      return fail(error);
    }
  });

  app.delete('/api/connections/:id', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: true });
    if (caller instanceof Response) return caller;
    try {
      const row = await revokeConnection(deps, caller.tenantId, c.req.param('id'));
      return c.json({ connection: publicConnection(row) });
    } catch (error) {
      return fail(error);
    }
  });

  app.post('/api/connections/:id/keys', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: true });
    if (caller instanceof Response) return caller;
    const body = await readJsonBody(c, keySchema);
    if (!body.ok) return flatError(body.status, body.message, { code: 'INVALID_REQUEST' });
    try {
      const issued = await mintConnectionKey(deps, caller.tenantId, c.req.param('id'), body.data.name);
      // Shown once: the key is stored only as its hash.
      return c.json(
        { id: issued.id, key: issued.key, prefix: issued.prefix, connection_id: c.req.param('id') },
        201,
        { 'cache-control': 'no-store' },
      );
    } catch (error) {
      return fail(error);
    }
  });

  app.post('/api/apps/:appId/connections', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: true });
    if (caller instanceof Response) return caller;
    const body = await readJsonBody(c, bindSchema);
    if (!body.ok) return flatError(body.status, body.message, { code: 'INVALID_REQUEST' });
    try {
      await bindConnection(deps, caller.tenantId, c.req.param('appId'), body.data.connection_id);
      return c.json({ app_id: c.req.param('appId'), connection_id: body.data.connection_id }, 201);
    } catch (error) {
      return fail(error);
    }
  });

  app.delete('/api/apps/:appId/connections/:connectionId', async (c) => {
    const caller = await callerOf(c, { appKey: false, write: true });
    if (caller instanceof Response) return caller;
    try {
      await unbindConnection(deps, caller.tenantId, c.req.param('appId'), c.req.param('connectionId'));
      return c.json({ app_id: c.req.param('appId'), connection_id: c.req.param('connectionId') });
    } catch (error) {
      return fail(error);
    }
  });

  return app;
}

/** The dashboard shape of a connection: everything but its credential. */
function publicConnection(row: ConnectionRow) {
  return {
    id: row.id,
    provider: row.provider,
    profile: row.profile,
    status: row.status,
    display_name: row.display_name,
    metadata: row.metadata,
    exclusive: row.exclusive,
    has_credential: row.credential_ciphertext !== null,
    error_message: row.error_message,
    setup_url: row.setup_url,
    connected_at: row.connected_at ? new Date(row.connected_at).toISOString() : null,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
