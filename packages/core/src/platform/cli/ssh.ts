import { Hono } from 'hono';
import { z } from 'zod';
import { bearerToken } from '../../identity/bearer.js';
import { hashSecret, safeEqual } from '../../identity/keys.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { type JsonBodyOptions, readJsonBody } from '../internal/json-body.js';
import { overLimit } from '../internal/rate-limit.js';
import {
  authenticateCliRequest,
  bodyTooLarge,
  CLI_MAX_BODY_BYTES,
  CLI_ROUTE_LIMIT,
  limitBody,
  NO_STORE,
} from './authenticate.js';
import type { SshBrokerSettings } from './options.js';

const START_BODY = '{ "deployment": "<slug or id>" }';
const CLAIM_BODY = '{ "token": "..." }';
const notJson = (expected: string) => `Request body must be JSON: ${expected}`;

/** A required string member whose refusal says whether it is missing or not a string. */
const stringField = (what: string) =>
  z.string({
    error: (issue) => (issue.input === undefined ? `is required (${what})` : `must be a string (${what})`),
  });

// A body that is not an object gets the expected shape; a member that is wrong gets named.
const startSchema = z.object(
  {
    deployment: stringField('an app slug or id')
      .max(200, 'must be at most 200 characters')
      .trim()
      .min(1, 'must not be blank'),
  },
  notJson(START_BODY),
);
const claimSchema = z.object({ token: stringField('the session token') }, notJson(CLAIM_BODY));

/**
 * Refuses a body that is not the JSON a route expects with a flat 400 (or 413): the expected
 * shape when it is not JSON, the field and what is wrong with it when the schema refused it.
 */
function expectJson(expected: string): JsonBodyOptions {
  return {
    maxBytes: CLI_MAX_BODY_BYTES,
    refuse: (status, message, bySchema) =>
      status === 413
        ? bodyTooLarge()
        : new PlatformError(400, bySchema ? message : notJson(expected), {
            code: 'VALIDATION_FAILED',
            headers: NO_STORE,
          }),
  };
}

const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** Used and expired sessions stay a day, for support questions ("did my shell connect?"). */
const KEEP_EXPIRED_MS = 24 * 60 * 60 * 1000;

/**
 * Shells into deployments, in two steps that keep every secret out of URLs:
 *
 * - `POST /api/cli/ssh-sessions` (CLI key, `{ deployment }` = app slug or id): a one-time token
 *   for the broker, valid 60 s, and the broker's URL. The CLI sends the token in the WebSocket
 *   upgrade's `Authorization` header.
 * - `POST /api/cli/ssh-sessions/claim` (the broker, `Authorization: Bearer <broker secret>`,
 *   `{ token }`): claims the token once and says which tenant, app and user the shell is for.
 *
 * @see docs/cli.md "ssh" for the broker's WebSocket protocol
 */
export function sshRoutes(ctx: PlatformContext, broker: SshBrokerSettings | null): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const sessions = ctx.sshSessions;
  let sweptAt = 0;
  /** Drops sessions a day past expiry, at most hourly per instance, off the request path. */
  const sweepNowAndThen = (now: number) => {
    if (now - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now;
    sessions.sweep(new Date(now - KEEP_EXPIRED_MS)).catch((error: unknown) => {
      ctx.logger.warn('ssh session sweep failed', { error: error instanceof Error ? error.name : 'unknown' });
    });
  };

  app.post('/api/cli/ssh-sessions', limitBody, async (c) => {
    const key = await authenticateCliRequest(ctx, c, 'cliSsh');
    if (key.kind !== 'cli') {
      throw new PlatformError(403, 'Only CLI keys can open a shell', {
        code: 'NOT_A_CLI_KEY',
        headers: NO_STORE,
      });
    }
    const body = await readJsonBody(c, startSchema, expectJson(START_BODY));
    if (!broker) {
      throw new PlatformError(503, 'No ssh broker is configured on this platform', {
        code: 'SSH_UNAVAILABLE',
        headers: NO_STORE,
      });
    }
    const target = await sessions.findDeployment(key.tenantId, body.deployment);
    if (!target) {
      throw new PlatformError(404, 'Deployment not found', {
        code: 'DEPLOYMENT_NOT_FOUND',
        headers: NO_STORE,
      });
    }
    sweepNowAndThen(Date.now());
    const started = await sessions.start({
      tenantId: key.tenantId,
      appId: target.id,
      userId: key.userId,
      keyId: key.keyId,
    });
    return c.json(
      {
        session_id: started.sessionId,
        broker_url: broker.url,
        token: started.token,
        expires_at: started.expiresAt.toISOString(),
        deployment: { id: target.id, slug: target.slug },
      },
      201,
      NO_STORE,
    );
  });

  app.post('/api/cli/ssh-sessions/claim', limitBody, async (c) => {
    c.set('errorShape', 'flat');
    if (!broker) throw new PlatformError(404, 'Not found');
    const wait = await overLimit(ctx, c, 'sshClaim', { ...CLI_ROUTE_LIMIT, limit: 600 });
    if (wait !== null) {
      throw new PlatformError(429, 'Rate limit exceeded', {
        headers: { ...NO_STORE, 'retry-after': String(wait) },
      });
    }
    const secret = bearerToken(c.req.header('authorization'));
    // Hashing first makes the comparison constant-time in the length too.
    if (!secret || !safeEqual(hashSecret(secret), hashSecret(broker.secret))) {
      throw new PlatformError(401, 'Unauthorized', { code: 'INVALID_BROKER_SECRET', headers: NO_STORE });
    }
    const body = await readJsonBody(c, claimSchema, expectJson(CLAIM_BODY));
    const claimed = await sessions.claim(body.token);
    if (!claimed) {
      throw new PlatformError(401, 'Invalid, expired or already used session token', {
        code: 'INVALID_SESSION_TOKEN',
        headers: NO_STORE,
      });
    }
    return c.json(
      {
        session_id: claimed.sessionId,
        tenant_id: claimed.tenantId,
        deployment: { id: claimed.appId, slug: claimed.appSlug },
        user: claimed.userId ? { id: claimed.userId, email: claimed.email } : null,
      },
      200,
      NO_STORE,
    );
  });

  return app;
}
