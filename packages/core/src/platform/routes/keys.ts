import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import {
  type KeySummary,
  MANAGED_KEY_KINDS,
  MAX_ROTATION_OVERLAP_SECONDS,
  type MintedKey,
} from '../../identity/tenant-keys.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { displayName } from '../internal/display-name.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import { requireSafeCookieWrite, requireSession, type SessionCaller } from '../internal/session.js';

const createSchema = z
  .strictObject({
    kind: z.enum(MANAGED_KEY_KINDS),
    name: displayName.optional(),
    appId: z.string().max(64).optional(),
  })
  .refine((body) => body.kind !== 'app' || body.appId !== undefined, {
    message: 'an App Key needs the appId of its app',
    path: ['appId'],
  })
  .refine((body) => body.kind !== 'cli' || body.appId === undefined, {
    message: 'a CLI key belongs to the signed-in user, not to an app',
    path: ['appId'],
  });

const renameSchema = z.strictObject({ name: displayName.nullable() });

const rotateSchema = z.strictObject({
  overlapSeconds: z.number().int().min(0).max(MAX_ROTATION_OVERLAP_SECONDS).optional(),
});

/**
 * A workspace's App Keys and CLI keys: list, create, name, rotate, revoke. Session cookie only,
 * and only the workspace's owners (members and viewers get 403). Bodies and answers are
 * camelCase; flat error bodies. The key itself appears once, in the answer that mints it.
 *
 * @see docs/api/keys.md
 */
export function keyRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const keys = ctx.tenantKeys;
  // Every answer, refusals included: these answers carry keys and who may manage them.
  noStoreOn(app, '/api/keys/*');

  /** The signed-in owner; `write` also refuses unsafe cookie writes. */
  const ownerOf = async (c: Context<PlatformEnv>, write: boolean): Promise<SessionCaller> => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    if (user.role !== 'owner') {
      throw new PlatformError(403, 'Forbidden: only workspace owners manage keys', { code: 'FORBIDDEN' });
    }
    if (write) requireSafeCookieWrite(ctx, c);
    return user;
  };

  app.get('/api/keys', async (c) => {
    const owner = await ownerOf(c, false);
    const [list, holders] = await Promise.all([
      keys.list(owner.tenantId),
      ctx.deployments.keyHolders(owner.tenantId),
    ]);
    // A deployment's own App Key is rotated, never revoked: the listing says which deployment holds it.
    return c.json(
      { keys: list.map((key) => ({ ...publicKey(key), deployment: holders.get(key.id) ?? null })) },
      200,
      NO_STORE,
    );
  });

  app.post('/api/keys', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, createSchema);
    const created = await keys.create(
      owner.tenantId,
      body.kind === 'app'
        ? { kind: 'app', appId: body.appId!, name: body.name }
        : { kind: 'cli', userId: owner.userId, name: body.name },
    );
    return c.json({ ...minted(created), revokedKeyIds: created.revokedKeyIds }, 201, NO_STORE);
  });

  app.patch('/api/keys/:id', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, renameSchema);
    const key = await keys.rename(owner.tenantId, c.req.param('id'), body.name);
    return c.json({ key: publicKey(key) }, 200, NO_STORE);
  });

  app.post('/api/keys/:id/rotate', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, rotateSchema);
    const rotated = await keys.rotate(
      owner.tenantId,
      c.req.param('id'),
      owner.userId,
      body.overlapSeconds,
      ctx.deployments.handOverKey,
    );
    // The deployment that held the old key was handed the new one; it restarts to call with it.
    const deployment = await ctx.deployments.restartKeyHolder(rotated.key.id);
    return c.json({ ...minted(rotated), replaced: publicKey(rotated.replaced), deployment }, 201, NO_STORE);
  });

  app.delete('/api/keys/:id', async (c) => {
    const owner = await ownerOf(c, true);
    await keys.revoke(owner.tenantId, c.req.param('id'));
    return c.json({ id: c.req.param('id'), revoked: true }, 200, NO_STORE);
  });

  return app;
}

/** The answer that mints a key: its summary and the key itself (shown this once). */
function minted(result: MintedKey) {
  return { key: publicKey(result.key), apiKey: result.apiKey };
}

function publicKey(key: KeySummary) {
  return {
    id: key.id,
    kind: key.kind,
    name: key.name,
    prefix: key.prefix,
    appId: key.appId,
    userId: key.userId,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    expiresAt: key.expiresAt?.toISOString() ?? null,
  };
}
