import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import { wholeNumber } from '../../http/whole-number.js';
import { canWrite } from '../../identity/accounts.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { displayName } from '../internal/display-name.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import { requireSession, type SessionCaller } from '../internal/session.js';
import { writerOf } from './deploy.js';

const renameSchema = z.strictObject({ name: displayName });
const secretSchema = z.strictObject({ value: z.string().max(16_384) });
const tailSchema = wholeNumber(1, 1000).default(200);
/** An origin exactly: scheme, host and port, nothing after (no path, query or credentials). */
const originSchema = z
  .string()
  .max(255)
  .refine(
    (value) =>
      URL.canParse(value) && /^https?:$/.test(new URL(value).protocol) && new URL(value).origin === value,
    'must be an origin such as https://app.example.com (no path, no trailing slash)',
  );
const callbackOriginsSchema = z.strictObject({ callbackOrigins: z.array(originSchema).max(20) });

/**
 * A workspace's apps: list, read (with the deployment's state, its usage and open URLs), rename,
 * delete; bindings, deployment status and logs; secrets (names only, values never answered).
 * Session cookie only. Every member reads; owners and members change, and read logs (a tool may
 * print what viewers should not see). camelCase answers, flat error bodies.
 *
 * Binding and unbinding a connection are the connections routes' (`/api/apps/{id}/connections`).
 *
 * @see docs/api/apps.md
 */
export function appRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const deployments = ctx.deployments;
  // Every answer, refusals included: an app's state and secrets' names are one workspace's.
  noStoreOn(app, '/api/apps/*');

  const readerOf = async (c: Context<PlatformEnv>): Promise<SessionCaller> => {
    c.set('errorShape', 'flat');
    return requireSession(ctx, c);
  };

  app.get('/api/apps', async (c) => {
    const user = await readerOf(c);
    return c.json({ apps: await deployments.list(user.tenantId) }, 200, NO_STORE);
  });

  app.get('/api/apps/:id', async (c) => {
    const user = await readerOf(c);
    return c.json({ app: await deployments.get(user.tenantId, c.req.param('id')) }, 200, NO_STORE);
  });

  app.patch('/api/apps/:id', async (c) => {
    const user = await writerOf(ctx, c);
    const body = await readJsonBody(c, renameSchema);
    return c.json({ app: await deployments.rename(user.tenantId, c.req.param('id'), body.name) });
  });

  app.get('/api/apps/:id/callback-origins', async (c) => {
    const user = await readerOf(c);
    return c.json(
      { callbackOrigins: await deployments.callbackOrigins(user.tenantId, c.req.param('id')) },
      200,
      NO_STORE,
    );
  });

  app.put('/api/apps/:id/callback-origins', async (c) => {
    const user = await writerOf(ctx, c);
    const body = await readJsonBody(c, callbackOriginsSchema);
    const origins = [...new Set(body.callbackOrigins)];
    return c.json({
      callbackOrigins: await deployments.setCallbackOrigins(user.tenantId, c.req.param('id'), origins),
    });
  });

  app.delete('/api/apps/:id', async (c) => {
    const user = await writerOf(ctx, c);
    await deployments.remove(user.tenantId, c.req.param('id'));
    return c.json({ id: c.req.param('id'), deleted: true });
  });

  app.get('/api/apps/:id/connections', async (c) => {
    const user = await readerOf(c);
    const bound = await deployments.bindings(user.tenantId, c.req.param('id'));
    return c.json({ connections: bound }, 200, NO_STORE);
  });

  app.get('/api/apps/:id/deployment', async (c) => {
    const user = await readerOf(c);
    const view = await deployments.get(user.tenantId, c.req.param('id'));
    if (!view.deployment)
      throw new PlatformError(404, 'The app was never deployed', { code: 'NOT_DEPLOYED' });
    return c.json({ deployment: view.deployment, usageUrl: view.usageUrl }, 200, NO_STORE);
  });

  app.get('/api/apps/:id/logs', async (c) => {
    const user = await readerOf(c);
    if (!canWrite(user.role)) {
      throw new PlatformError(403, 'Forbidden: viewers cannot read logs', { code: 'FORBIDDEN' });
    }
    const tail = tailSchema.safeParse(c.req.query('tail') ?? undefined);
    if (!tail.success) {
      throw new PlatformError(400, 'tail must be a whole number from 1 to 1000', { code: 'INVALID_REQUEST' });
    }
    const lines = await deployments.logs(user.tenantId, c.req.param('id'), tail.data);
    return c.json({ lines }, 200, NO_STORE);
  });

  app.get('/api/apps/:id/secrets', async (c) => {
    const user = await readerOf(c);
    const names = await deployments.secretNames(user.tenantId, c.req.param('id'));
    return c.json({ secrets: names.map((name) => ({ name })) }, 200, NO_STORE);
  });

  app.put('/api/apps/:id/secrets/:name', async (c) => {
    const user = await writerOf(ctx, c);
    const body = await readJsonBody(c, secretSchema);
    await deployments.setSecret(user.tenantId, c.req.param('id'), c.req.param('name'), body.value);
    return c.json({ name: c.req.param('name'), set: true });
  });

  app.delete('/api/apps/:id/secrets/:name', async (c) => {
    const user = await writerOf(ctx, c);
    await deployments.unsetSecret(user.tenantId, c.req.param('id'), c.req.param('name'));
    return c.json({ name: c.req.param('name'), set: false });
  });

  return app;
}
