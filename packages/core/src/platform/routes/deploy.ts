import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import { canWrite } from '../../identity/accounts.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { displayName } from '../internal/display-name.js';
import { isKnownIdempotencyKey, withIdempotency } from '../internal/idempotency.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import { overLimit } from '../internal/rate-limit.js';
import {
  optionalSession,
  requireSafeCookieWrite,
  requireSession,
  type SessionCaller,
} from '../internal/session.js';

/** An app's slug: its path under `/apps/` and its name in host-based addresses. */
export const APP_SLUG = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;

const inputValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const deploySchema = z.strictObject({
  toolSlug: z.string().min(1).max(64),
  version: z.string().min(1).max(64).optional(),
  slug: z.string().regex(APP_SLUG, 'must be 3 to 64 of a-z, 0-9 and -, starting with a letter'),
  name: displayName.optional(),
  inputs: z.record(z.string().max(128), inputValue).optional(),
  connections: z.record(z.string().max(64), z.string().max(64)).optional(),
});
const redeploySchema = z.strictObject({ version: z.string().min(1).max(64).optional() });

/**
 * Deploying catalog tools: `POST /api/deploy`, and redeploying or stopping a deployed app. Session
 * cookie only; owners and members (viewers get 403). camelCase bodies, flat error bodies with
 * codes. `Idempotency-Key` replays the answer of a deploy (sealed at rest: it holds the App Key).
 *
 * @see docs/api/deploy.md
 */
export function deployRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const deployments = ctx.deployments;
  // A deploy's answer carries its App Key, shown once: never kept by a cache, nor its refusals.
  noStoreOn(app, '/api/deploy');

  app.post('/api/deploy', async (c) => {
    c.set('errorShape', 'flat');
    // Counted before authentication, like every limit: a guessing client spends the same budget.
    // A retry of the caller's own deploy (its Idempotency-Key already sent) replays it or is told
    // to wait, deploying nothing: it spends nothing, so a double submit cannot use up the hour.
    const retry = await isDeployRetry(ctx, c);
    const wait = retry ? null : await overLimit(ctx, c, 'deploy', ctx.rateLimits.deploy);
    if (wait !== null) {
      throw new PlatformError(429, 'Rate limit exceeded', {
        code: 'RATE_LIMITED',
        headers: { 'retry-after': String(wait) },
      });
    }
    const user = await writerOf(ctx, c);
    const body = await readJsonBody(c, deploySchema);
    return withIdempotency(
      ctx,
      c,
      { tenantId: user.tenantId, userId: user.userId },
      DEPLOY_ROUTE,
      body,
      async () => {
        const deployed = await deployments.deploy({
          tenantId: user.tenantId,
          userId: user.userId,
          toolSlug: body.toolSlug,
          slug: body.slug,
          inputs: body.inputs ?? {},
          connections: body.connections ?? {},
          ...(body.version !== undefined ? { version: body.version } : {}),
          ...(body.name !== undefined ? { name: body.name } : {}),
        });
        return { status: 201, body: deployed };
      },
      { sealed: true },
    );
  });

  app.post('/api/apps/:id/redeploy', async (c) => {
    const user = await writerOf(ctx, c);
    const body = await readJsonBody(c, redeploySchema);
    const view = await deployments.redeploy(user.tenantId, c.req.param('id'), body.version);
    return c.json({ app: view }, 200, NO_STORE);
  });

  app.post('/api/apps/:id/stop', async (c) => {
    const user = await writerOf(ctx, c);
    const view = await deployments.stop(user.tenantId, c.req.param('id'));
    return c.json({ app: view }, 200, NO_STORE);
  });

  return app;
}

const DEPLOY_ROUTE = 'POST /api/deploy';

/** Whether the request carries an `Idempotency-Key` its signed-in caller already sent to deploy. */
async function isDeployRetry(ctx: PlatformContext, c: Context<PlatformEnv>): Promise<boolean> {
  if (c.req.header('idempotency-key') === undefined) return false;
  const caller = await optionalSession(ctx, c);
  if (!caller?.tenantId) return false;
  return isKnownIdempotencyKey(ctx, c, { tenantId: caller.tenantId, userId: caller.userId }, DEPLOY_ROUTE);
}

/** The signed-in owner or member, on a safe cookie write; viewers get 403. */
export async function writerOf(ctx: PlatformContext, c: Context<PlatformEnv>): Promise<SessionCaller> {
  c.set('errorShape', 'flat');
  const user = await requireSession(ctx, c);
  requireSafeCookieWrite(ctx, c);
  if (!canWrite(user.role)) {
    throw new PlatformError(403, 'Forbidden: viewers cannot change apps', { code: 'FORBIDDEN' });
  }
  return user;
}
