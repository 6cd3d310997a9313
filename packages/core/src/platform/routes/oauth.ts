import { randomBytes } from 'node:crypto';
import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { ConnectorOAuthError } from '../../connections/oauth-errors.js';
import { NO_STORE } from '../../http/errors.js';
import { canWrite } from '../../identity/accounts.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError, refusalOf } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requireSafeCookieWrite, requireSession, type SessionCaller } from '../internal/session.js';
import { oauthResultPage } from './oauth-page.js';

/** A provider slug as integrations spell it; anything else is an unknown provider (404). */
const PROVIDER = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Longest value of a query parameter the flow reads. */
const MAX_PARAM = 2048;

const startFields = {
  returnTo: z.string().min(1).max(MAX_PARAM).optional(),
  appId: z.string().min(1).max(64).optional(),
  connectionId: z.string().min(1).max(64).optional(),
};
const startQuery = z.object(startFields);
const startBody = z.strictObject(startFields);
const callbackQuery = z.object({
  state: z.string().max(MAX_PARAM).optional(),
  code: z.string().max(MAX_PARAM).optional(),
  error: z.string().max(200).optional(),
});

/**
 * Connector OAuth: start an authorization (`GET` redirects the browser, `POST` answers the
 * authorize URL for a page that opens its own popup), the provider's callback (an HTML page that
 * posts the outcome to the opener), and disconnecting. Session cookie; owners and members connect
 * and disconnect, viewers are refused. JSON refusals are flat bodies; the callback always answers
 * its page, whatever went wrong.
 *
 * @see docs/api/oauth.md
 */
export function oauthRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const oauth = ctx.connectorOAuth;
  const origin = new URL(ctx.baseUrl).origin;

  const providerOf = (c: Context<PlatformEnv>): string => {
    const provider = c.req.param('provider') ?? '';
    if (!PROVIDER.test(provider))
      throw new PlatformError(404, `Unknown integration: ${provider.slice(0, 64)}`, { code: 'NOT_FOUND' });
    return provider;
  };
  const writerOf = async (c: Context<PlatformEnv>): Promise<SessionCaller> => {
    const user = await requireSession(ctx, c);
    if (!canWrite(user.role)) {
      throw new PlatformError(403, 'Forbidden: viewers cannot connect integrations', { code: 'FORBIDDEN' });
    }
    return user;
  };
  /** `returnTo` on the platform's own origin only, as an absolute URL; anything else is a 400. */
  const returnToOf = (value: string | undefined): string | null => {
    if (value === undefined) return null;
    const url = URL.canParse(value, ctx.baseUrl) ? new URL(value, ctx.baseUrl) : null;
    if (url?.origin !== origin) {
      throw new PlatformError(400, 'returnTo must be a URL on this platform', { code: 'INVALID_REQUEST' });
    }
    return url.href;
  };
  const start = async (c: Context<PlatformEnv>, fields: z.infer<typeof startQuery>) => {
    const provider = providerOf(c);
    const user = await writerOf(c);
    return oauth.start({
      tenantId: user.tenantId,
      userId: user.userId,
      provider,
      returnTo: returnToOf(fields.returnTo),
      appId: fields.appId ?? null,
      connectionId: fields.connectionId ?? null,
    });
  };

  app.get('/api/oauth/:provider/start', async (c) => {
    const query = startQuery.safeParse(c.req.query());
    if (!query.success) {
      throw new PlatformError(400, 'returnTo, appId and connectionId must be short strings', {
        code: 'INVALID_REQUEST',
      });
    }
    const { authorizeUrl } = await start(c, query.data);
    return c.body(null, 302, { location: authorizeUrl, ...NO_STORE, 'referrer-policy': 'no-referrer' });
  });

  app.post('/api/oauth/:provider/start', async (c) => {
    requireSafeCookieWrite(ctx, c);
    const body = await readJsonBody(c, startBody);
    const { authorizeUrl, expiresAt } = await start(c, body);
    return c.json({ authorizeUrl, expiresAt: expiresAt.toISOString() }, 201, NO_STORE);
  });

  /**
   * A host app's user goes back to the host's page (its registered origin was checked when the
   * flow began), which learns the outcome by polling; the query names the flow and its status.
   */
  const backToHost = (
    callbackUrl: string,
    flowId: string,
    status: 'connected' | 'failed',
    error: string | null,
  ) => {
    const url = new URL(callbackUrl);
    url.searchParams.set('connection', flowId);
    url.searchParams.set('status', status);
    if (error) url.searchParams.set('error', error.slice(0, 200));
    return new Response(null, {
      status: 302,
      headers: { location: url.href, ...NO_STORE, 'referrer-policy': 'no-referrer' },
    });
  };

  app.get('/api/oauth/:provider/callback', async (c) => {
    const provider = (c.req.param('provider') ?? '').slice(0, 64);
    let backTo = `${ctx.baseUrl}/`;
    const page = (status: number, message: Parameters<typeof oauthResultPage>[0]) => {
      const { html, headers } = oauthResultPage(message, {
        targetOrigin: origin,
        backTo,
        nonce: randomBytes(16).toString('base64'),
      });
      return c.html(html, status as 200, headers);
    };
    try {
      providerOf(c);
      const query = callbackQuery.safeParse(c.req.query());
      if (!query.success) {
        throw new ConnectorOAuthError(
          400,
          'INVALID_REQUEST',
          'The callback parameters are malformed or too long',
        );
      }
      // A host app's user has no session here: their flow's state is its own proof.
      const user = await requireSession(ctx, c).catch((error: unknown) => {
        if (error instanceof PlatformError && error.status === 401) return null;
        throw error;
      });
      const done = await oauth.complete({
        session: user ? { tenantId: user.tenantId, userId: user.userId } : null,
        provider,
        state: query.data.state ?? null,
        code: query.data.code ?? null,
        error: query.data.error ?? null,
      });
      if (done.flowId && done.returnTo) return backToHost(done.returnTo, done.flowId, 'connected', null);
      if (done.returnTo) backTo = done.returnTo;
      return page(200, {
        type: 'service:oauth',
        status: 'connected',
        provider,
        connectionId: done.connectionId,
      });
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) {
        ctx.logger.error('oauth callback failed', {
          request_id: c.get('requestId'),
          provider,
          error_message: error instanceof Error ? error.message : String(error),
        });
      }
      if (error instanceof ConnectorOAuthError && error.flowId) {
        const reason = refusal?.message ?? 'Something went wrong; try again';
        await ctx.endUserConnections.fail(error.flowId, reason);
        if (error.returnTo) return backToHost(error.returnTo, error.flowId, 'failed', reason);
      }
      if (error instanceof ConnectorOAuthError && error.returnTo) backTo = error.returnTo;
      return page(refusal?.status ?? 500, {
        type: 'service:oauth',
        status: 'error',
        provider,
        error: refusal?.message ?? 'Something went wrong; try again',
      });
    }
  });

  app.delete('/api/oauth/:provider/connections/:id', async (c) => {
    const provider = providerOf(c);
    const user = await writerOf(c);
    requireSafeCookieWrite(ctx, c);
    const { connection, revokedAtProvider } = await oauth.disconnect(
      user.tenantId,
      provider,
      c.req.param('id'),
    );
    return c.json(
      { id: connection.id, provider: connection.provider, status: connection.status, revokedAtProvider },
      200,
      NO_STORE,
    );
  });

  return app;
}
