import { type Context, Hono } from 'hono';
import { z } from 'zod';
import type { ConnectionRow } from '../../connections/service.js';
import { NO_STORE } from '../../http/errors.js';
import { canWrite } from '../../identity/accounts.js';
import { bearerToken } from '../../identity/bearer.js';
import { KEY_PREFIX } from '../../identity/keys.js';
import { CONNECTION_STATUSES } from '../../schemas/connections.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { displayName, readableText } from '../internal/display-name.js';
import { withIdempotency } from '../internal/idempotency.js';
import { readJsonBody } from '../internal/json-body.js';
import { credentialFailed, credentialsBlocked, FAILED_CREDENTIALS_MESSAGE } from '../internal/rate-limit.js';
import { requireSafeCookieWrite, requireSession } from '../internal/session.js';

const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'must be an integration slug');
const metadata = z
  .record(z.string(), z.unknown())
  .refine((value) => JSON.stringify(value).length <= 16_384, 'must be at most 16 KiB of JSON');
const credential = z.record(z.string(), z.unknown());

const createSchema = z.strictObject({
  provider: slug,
  profile: z.string().min(1).max(64).optional(),
  display_name: readableText(200).optional(),
  credential: credential.optional(),
  metadata: metadata.optional(),
  exclusive: z.boolean().optional(),
  app_id: z.string().max(64).optional(),
});

const patchSchema = z.strictObject({
  status: z.enum(CONNECTION_STATUSES).optional(),
  display_name: readableText(200).optional(),
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
const keySchema = z.strictObject({ name: displayName.optional() });

/** A dashboard user changing or reading connections. */
type SessionCaller = { tenantId: string; appId: null; userId: string; via: 'session' };
/** Who is creating a connection: a dashboard user, or a deployed tool with its App Key. */
type Caller = { tenantId: string; appId: string; via: 'app_key' } | SessionCaller;

/** Reads are open to every member; changes are refused to viewers and unsafe cookie writes. */
const READ = { write: false };
const WRITE = { write: true };

/**
 * Connections and their bindings, keys and status. `POST /api/connections` takes an App Key (the
 * connection is made for, and bound to, the key's app) or a session; the rest takes a session
 * (owners and members change, viewers read). Flat error bodies; refusals (the caller's, the
 * body's, the connection's `ConnectionError`s) are thrown and answered by the platform.
 *
 * @see docs/api/connections.md
 */
export function connectionRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const connections = ctx.connections;

  /** The signed-in caller; `write` refuses viewers and unsafe cookie writes. */
  const sessionCallerOf = async (
    c: Context<PlatformEnv>,
    access: { write: boolean },
  ): Promise<SessionCaller> => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    if (access.write) {
      requireSafeCookieWrite(ctx, c);
      if (!canWrite(user.role)) throw new PlatformError(403, 'Forbidden: viewers cannot change connections');
    }
    return { tenantId: user.tenantId, appId: null, userId: user.userId, via: 'session' };
  };

  /** The caller creating a connection: an App Key's tool, else a member who may write. */
  const creatorOf = async (c: Context<PlatformEnv>): Promise<Caller> => {
    c.set('errorShape', 'flat');
    const token = bearerToken(c.req.header('authorization'));
    if (token?.startsWith(KEY_PREFIX)) {
      const throttled = (wait: number) =>
        new PlatformError(429, FAILED_CREDENTIALS_MESSAGE, { headers: { 'retry-after': String(wait) } });
      const blocked = credentialsBlocked(ctx, c);
      if (blocked !== null) throw throttled(blocked);
      const key = await ctx.keys.authenticate(token);
      if (!key) {
        const wait = await credentialFailed(ctx, c);
        throw wait === null ? new PlatformError(401, 'Unauthorized') : throttled(wait);
      }
      // A live key of another kind authenticated: it is not permitted here (403), and is not a
      // failed credential, as the CLI routes answer a key that is not a CLI key.
      if (key.kind !== 'app' || !key.appId) {
        throw new PlatformError(403, 'Only an App Key or a signed-in member makes connections', {
          code: 'FORBIDDEN',
        });
      }
      return { tenantId: key.tenantId, appId: key.appId, via: 'app_key' };
    }
    return sessionCallerOf(c, WRITE);
  };

  app.post('/api/connections', async (c) => {
    const caller = await creatorOf(c);
    const body = await readJsonBody(c, createSchema);
    if (caller.via === 'app_key' && body.app_id && body.app_id !== caller.appId) {
      throw new PlatformError(403, 'An App Key makes connections for its own app only', {
        code: 'FORBIDDEN',
      });
    }
    const owner =
      caller.via === 'app_key'
        ? { tenantId: caller.tenantId, appId: caller.appId }
        : { tenantId: caller.tenantId, userId: caller.userId };
    return withIdempotency(ctx, c, owner, 'POST /api/connections', body, async () => {
      const row = await connections.create({
        tenantId: caller.tenantId,
        provider: body.provider,
        profile: body.profile,
        displayName: body.display_name,
        credential: body.credential,
        metadata: body.metadata,
        exclusive: body.exclusive,
        appId: caller.appId ?? body.app_id ?? null,
      });
      return { status: 201, body: { connection: publicConnection(row) } };
    });
  });

  app.get('/api/connections', async (c) => {
    const caller = await sessionCallerOf(c, READ);
    const rows = await connections.list(caller.tenantId);
    return c.json({ connections: rows.map(publicConnection) }, 200, NO_STORE);
  });

  app.get('/api/connections/:id', async (c) => {
    const caller = await sessionCallerOf(c, READ);
    const row = await connections.get(caller.tenantId, c.req.param('id'));
    return c.json({ connection: publicConnection(row) }, 200, NO_STORE);
  });

  app.patch('/api/connections/:id', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    const body = await readJsonBody(c, patchSchema);
    const row = await connections.update(caller.tenantId, c.req.param('id'), {
      status: body.status,
      displayName: body.display_name,
      metadata: body.metadata,
      credential: body.credential,
      errorMessage: body.error_message,
      setupUrl: body.setup_url,
    });
    return c.json({ connection: publicConnection(row) });
  });

  app.delete('/api/connections/:id', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    const row = await connections.revoke(caller.tenantId, c.req.param('id'));
    return c.json({ connection: publicConnection(row) });
  });

  app.get('/api/connections/:id/keys', async (c) => {
    const caller = await sessionCallerOf(c, READ);
    const keys = await connections.listKeys(caller.tenantId, c.req.param('id'));
    return c.json(
      {
        keys: keys.map((key) => ({
          id: key.id,
          connection_id: c.req.param('id'),
          name: key.name,
          prefix: key.prefix,
          user_id: key.userId,
          created_at: key.createdAt.toISOString(),
          last_used_at: key.lastUsedAt?.toISOString() ?? null,
        })),
      },
      200,
      NO_STORE,
    );
  });

  app.post('/api/connections/:id/keys', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    const body = await readJsonBody(c, keySchema);
    const issued = await connections.mintKey(caller.tenantId, c.req.param('id'), caller.userId, body.name);
    // Shown once: the key is stored only as its hash.
    return c.json(
      { id: issued.id, key: issued.key, prefix: issued.prefix, connection_id: c.req.param('id') },
      201,
      NO_STORE,
    );
  });

  app.delete('/api/connections/:id/keys/:keyId', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    await connections.revokeKey(caller.tenantId, c.req.param('id'), c.req.param('keyId'));
    return c.json({ id: c.req.param('keyId'), connection_id: c.req.param('id'), revoked: true });
  });

  app.post('/api/apps/:appId/connections', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    const body = await readJsonBody(c, bindSchema);
    await connections.bind(caller.tenantId, c.req.param('appId'), body.connection_id);
    return c.json({ app_id: c.req.param('appId'), connection_id: body.connection_id }, 201);
  });

  app.delete('/api/apps/:appId/connections/:connectionId', async (c) => {
    const caller = await sessionCallerOf(c, WRITE);
    await connections.unbind(caller.tenantId, c.req.param('appId'), c.req.param('connectionId'));
    return c.json({ app_id: c.req.param('appId'), connection_id: c.req.param('connectionId') });
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
