/**
 * Connector OAuth over real HTTP against a real OAuth 2 server on loopback (oauth2-mock-server):
 * the admin's client configuration, start (state, PKCE) and the provider's redirect, the callback
 * page, tokens sealed in the connection, refresh before expiry (lazy, on the timer, concurrent,
 * refused -> needs_reauth on the event stream), reconnecting, disconnecting (RFC 7009), and every
 * refusal: replayed, forged, expired and foreign states, other workspaces' ids, bad input.
 *
 * @see docs/api/oauth.md
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { MutableResponse, OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openCredential } from '../src/connections/credentials.js';
import { ConfigError } from '../src/platform/config.js';
import { createPlatform } from '../src/platform/create-platform.js';
import { runtimeConnectionsSchema } from '../src/schemas/connections.js';
import { createSealer, parseEncryptionKeys } from '../src/store/sealing.js';
import { contextWithCookie, itInBrowser, launchChromium } from './support/chromium.js';
import { type OAuthProvider, startOAuthProvider } from './support/oauth-provider.js';
import {
  devSignIn,
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  signedInTeammate,
  startPlatformAtOwnUrl,
  TEST_ENCRYPTION_KEY,
} from './support/platform.js';
import { openSse } from './support/sse.js';
import { openTestStore, type TestStore } from './support/stores.js';

const PROVIDER = 'acme-crm';
const ADMIN = 'admin@example.test';
const sealer = createSealer(parseEncryptionKeys(TEST_ENCRYPTION_KEY));

type TokenRequest = IncomingMessage & { body: Record<string, string> };

describe('connector OAuth', () => {
  let store: TestStore;
  let server: RunningPlatform;
  let provider: OAuth2Server;
  let providerUrl: string;
  let adminCookie: string;
  let owner: SignedInOwner;
  /** Token requests the provider received (their form fields and Authorization header). */
  let tokenRequests: Array<{ body: Record<string, string>; authorization: string | undefined }>;
  let revocations: Array<{ authorization: string | undefined }>;
  /** How the provider answers the next token requests (default: as it would). */
  let tokenAnswer:
    | ((request: Record<string, string>) => { status: number; body: Record<string, unknown> } | null)
    | null;
  let oauthProvider: OAuthProvider;

  beforeAll(async () => {
    store = await openTestStore();
    oauthProvider = await startOAuthProvider();
    provider = oauthProvider.server;
    providerUrl = oauthProvider.url;
    provider.service.on('beforeResponse', (response: MutableResponse, req: TokenRequest) => {
      tokenRequests.push({ body: { ...req.body }, authorization: req.headers.authorization });
      const answer = tokenAnswer?.(req.body);
      if (answer) {
        response.statusCode = answer.status;
        response.body = answer.body;
      }
    });
    provider.service.on('beforeRevoke', (_response: unknown, req: IncomingMessage) => {
      revocations.push({ authorization: req.headers.authorization });
    });
    server = await startPlatformAtOwnUrl(store, {
      adminEmails: [ADMIN],
      connectorOAuth: { refreshEveryMs: 0 },
    });
    await store.db
      .insertInto('integrations')
      .values([
        {
          provider: PROVIDER,
          name: 'Acme CRM',
          kind: 'connector',
          default_profile: 'user_oauth',
          supported_profiles: JSON.stringify(['user_oauth']),
        },
        { provider: 'metered-svc', name: 'Metered', kind: 'service' },
      ])
      .execute();
    adminCookie = await devSignIn(server, ADMIN);
    const configured = await asUser(adminCookie, 'PUT', `/api/admin/integrations/${PROVIDER}/oauth`, {
      authorizeUrl: `${providerUrl}/authorize`,
      tokenUrl: `${providerUrl}/token`,
      revocationUrl: `${providerUrl}/revoke`,
      clientId: 'platform-client',
      clientSecret: 'client-secret-value',
      scopes: ['contacts.read', 'offline_access'],
      authorizeParams: { access_type: 'offline' },
    });
    expect(configured.status).toBe(200);
    owner = await signedInOwner(server, 'owner@example.test');
  });
  afterAll(async () => {
    await server?.close();
    await provider?.stop();
    await store?.dispose();
  });
  beforeEach(() => {
    tokenRequests = [];
    revocations = [];
    tokenAnswer = null;
    oauthProvider.refuseWith(null);
  });

  const asUser = sessionClient(() => server.url);
  const startPath = (query: Record<string, string> = {}, slug = PROVIDER) =>
    `/api/oauth/${slug}/start${Object.keys(query).length ? `?${new URLSearchParams(query)}` : ''}`;

  /** Starts as `cookie`, follows the provider's authorize redirect: the callback URL it sends back. */
  const authorize = async (cookie: string, query: Record<string, string> = {}) => {
    const started = await asUser(cookie, 'GET', startPath(query));
    expect(started.status).toBe(302);
    const authorizeUrl = new URL(started.headers.get('location')!);
    const atProvider = await fetch(authorizeUrl, { redirect: 'manual' });
    expect(atProvider.status).toBe(302);
    return { authorizeUrl, callbackUrl: atProvider.headers.get('location')! };
  };
  /** The callback page: its status, headers, HTML and the message it posts. */
  const callback = async (cookie: string | null, url: string) => {
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    const html = await response.text();
    const json = /<script type="application\/json" id="oauth-result">(.*?)<\/script>/s.exec(html)?.[1];
    const data = json
      ? (JSON.parse(json) as { message: Record<string, string>; targetOrigin: string })
      : null;
    return {
      status: response.status,
      headers: response.headers,
      html,
      message: data?.message,
      target: data?.targetOrigin,
    };
  };
  const connect = async (cookie: string, query: Record<string, string> = {}) => {
    const { callbackUrl, authorizeUrl } = await authorize(cookie, query);
    return { ...(await callback(cookie, callbackUrl)), authorizeUrl, callbackUrl };
  };
  const storedCredential = async (id: string) => {
    const row = await store.db
      .selectFrom('connections')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    return {
      row,
      credential: row.credential_ciphertext ? openCredential(sealer, id, row.credential_ciphertext) : null,
    };
  };
  const runtime = async (appKey: string) => {
    const response = await fetch(`${server.url}/api/deployments/me/connections`, {
      headers: { authorization: `Bearer ${appKey}` },
    });
    expect(response.status).toBe(200);
    const body = await response.json();
    return { body, connections: runtimeConnectionsSchema.parse(body).connections };
  };
  const expireToken = (id: string) =>
    store.db
      .updateTable('connections')
      .set({ token_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', id)
      .execute();
  const connectionCount = async (tenantId: string) =>
    Number(
      (
        await store.db
          .selectFrom('connections')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('tenant_id', '=', tenantId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  describe('client configuration', () => {
    it('answers the client without its secret, and keeps the secret sealed at rest', async () => {
      const response = await asUser(adminCookie, 'GET', `/api/admin/integrations/${PROVIDER}/oauth`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).not.toContain('client-secret-value');
      const { client } = JSON.parse(text);
      expect(client).toMatchObject({
        provider: PROVIDER,
        clientId: 'platform-client',
        hasClientSecret: true,
        pkce: true,
        tokenAuthMethod: 'client_secret_basic',
        scopes: ['contacts.read', 'offline_access'],
      });
      const row = await store.db
        .selectFrom('integration_oauth_clients')
        .select('client_secret_ciphertext')
        .where('provider', '=', PROVIDER)
        .executeTakeFirstOrThrow();
      expect(row.client_secret_ciphertext).not.toContain('client-secret-value');
    });

    it('refuses non-admins, non-connectors, unknown integrations and bad clients', async () => {
      const body = {
        authorizeUrl: `${providerUrl}/authorize`,
        tokenUrl: `${providerUrl}/token`,
        clientId: 'x',
      };
      expect(
        (await asUser(owner.cookie, 'PUT', `/api/admin/integrations/${PROVIDER}/oauth`, body)).status,
      ).toBe(403);
      const notConnector = await asUser(
        adminCookie,
        'PUT',
        '/api/admin/integrations/metered-svc/oauth',
        body,
      );
      expect(notConnector.status).toBe(400);
      expect((await notConnector.json()).code).toBe('NOT_A_CONNECTOR');
      expect((await asUser(adminCookie, 'PUT', '/api/admin/integrations/nope/oauth', body)).status).toBe(404);
      for (const bad of [
        { ...body, tokenUrl: 'http://provider.example/token' },
        { ...body, authorizeUrl: 'javascript:alert(1)' },
        { ...body, authorizeUrl: 'nope' },
        { ...body, revocationUrl: 'nope' },
        { ...body, clientId: '' },
        { ...body, authorizeParams: { state: 'fixed' } },
        { ...body, tokenAuthMethod: 'private_key_jwt' },
        { ...body, extra: true },
      ]) {
        expect(
          (await asUser(adminCookie, 'PUT', `/api/admin/integrations/${PROVIDER}/oauth`, bad)).status,
        ).toBe(400);
      }
      expect(
        (await asUser(adminCookie, 'PUT', `/api/admin/integrations/${PROVIDER}/oauth`, '{"authorizeUrl":'))
          .status,
      ).toBe(400);
    });
  });

  describe('clients from the environment', () => {
    it('connects with a client from SERVICE_OAUTH_CLIENTS, which the admin API shows but does not change', async () => {
      await store.db
        .insertInto('integrations')
        .values({ provider: 'env-crm', name: 'Env CRM', kind: 'connector' })
        .execute();
      const env = await startPlatformAtOwnUrl(store, {
        adminEmails: [ADMIN],
        connectorOAuth: { refreshEveryMs: 0 },
        env: {
          SERVICE_OAUTH_CLIENTS: JSON.stringify({
            'env-crm': {
              authorizeUrl: `${providerUrl}/authorize`,
              tokenUrl: `${providerUrl}/token`,
              clientId: 'env-client',
              clientSecret: 'env-secret-value',
              tokenAuthMethod: 'client_secret_post',
            },
          }),
        },
      });
      try {
        const started = await fetch(`${env.url}/api/oauth/env-crm/start`, {
          redirect: 'manual',
          headers: { cookie: owner.cookie },
        });
        expect(started.status).toBe(302);
        const authorizeUrl = new URL(started.headers.get('location')!);
        expect(authorizeUrl.searchParams.get('client_id')).toBe('env-client');
        const atProvider = await fetch(authorizeUrl, { redirect: 'manual' });
        const page = await callback(owner.cookie, atProvider.headers.get('location')!);
        expect(page.message).toMatchObject({ status: 'connected', provider: 'env-crm' });
        expect(tokenRequests[0]!.body).toMatchObject({
          client_id: 'env-client',
          client_secret: 'env-secret-value',
        });
        expect(tokenRequests[0]!.authorization).toBeUndefined();

        const read = await fetch(`${env.url}/api/admin/integrations/env-crm/oauth`, {
          headers: { cookie: adminCookie },
        });
        const text = await read.text();
        expect(text).not.toContain('env-secret-value');
        expect(JSON.parse(text).client).toMatchObject({
          source: 'environment',
          clientId: 'env-client',
          hasClientSecret: true,
        });
        const change = await fetch(`${env.url}/api/admin/integrations/env-crm/oauth`, {
          method: 'PUT',
          headers: { cookie: adminCookie, 'content-type': 'application/json' },
          body: JSON.stringify({
            authorizeUrl: `${providerUrl}/authorize`,
            tokenUrl: `${providerUrl}/token`,
            clientId: 'x',
          }),
        });
        expect(change.status).toBe(409);
        expect((await change.json()).code).toBe('CONFIGURED_BY_ENVIRONMENT');
        expect(
          await store.db
            .selectFrom('integration_oauth_clients')
            .selectAll()
            .where('provider', '=', 'env-crm')
            .execute(),
        ).toEqual([]);
      } finally {
        await env.close();
      }
    });

    it('refuses to start with a malformed SERVICE_OAUTH_CLIENTS, naming the variable but no value', async () => {
      for (const value of [
        '{not json',
        JSON.stringify({ 'env-crm': { clientId: 'x', clientSecret: 'leak-me' } }),
        JSON.stringify({
          'env-crm': { authorizeUrl: 'nope', tokenUrl: 'nope', clientId: 'x', clientSecret: 'leak-me' },
        }),
      ]) {
        const failed = await createPlatform({ store, env: { SERVICE_OAUTH_CLIENTS: value } }).then(
          () => null,
          (error: Error) => error,
        );
        expect(failed).toBeInstanceOf(ConfigError);
        expect(failed?.message).toMatch(/SERVICE_OAUTH_CLIENTS/);
        expect(failed?.message).not.toContain('leak-me');
      }
      const notUrl = await createPlatform({
        store,
        env: {
          SERVICE_OAUTH_CLIENTS: JSON.stringify({
            'env-crm': { authorizeUrl: 'nope', tokenUrl: 'nope', clientId: 'x' },
          }),
        },
      }).catch((error: Error) => error);
      expect(notUrl).toBeInstanceOf(ConfigError);
      expect((notUrl as Error).message).toMatch(/authorizeUrl/);
    });
  });

  describe('connecting', () => {
    it('redirects to the provider with a hashed single-use state and PKCE, and stores the tokens sealed', async () => {
      const before = await connectionCount(owner.tenantId);
      const result = await connect(owner.cookie, { appId: owner.appId, returnTo: '/integrations/acme-crm' });
      const { authorizeUrl } = result;
      expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(`${providerUrl}/authorize`);
      const params = authorizeUrl.searchParams;
      expect(params.get('client_id')).toBe('platform-client');
      expect(params.get('redirect_uri')).toBe(`${server.url}/api/oauth/${PROVIDER}/callback`);
      expect(params.get('response_type')).toBe('code');
      expect(params.get('scope')).toBe('contacts.read offline_access');
      expect(params.get('access_type')).toBe('offline');
      expect(params.get('code_challenge_method')).toBe('S256');
      const state = params.get('state')!;
      expect(state.length).toBeGreaterThanOrEqual(43);

      // The exchange: the verifier behind the challenge, the code, the same redirect URI, the client's basic auth.
      const exchange = tokenRequests.find((r) => r.body.grant_type === 'authorization_code')!;
      expect(createHash('sha256').update(exchange.body.code_verifier!).digest('base64url')).toBe(
        params.get('code_challenge'),
      );
      expect(exchange.body.redirect_uri).toBe(`${server.url}/api/oauth/${PROVIDER}/callback`);
      expect(exchange.authorization).toBe(
        `Basic ${Buffer.from('platform-client:client-secret-value').toString('base64')}`,
      );

      expect(result.status).toBe(200);
      expect(result.message).toMatchObject({
        type: 'service:oauth',
        status: 'connected',
        provider: PROVIDER,
      });
      expect(result.target).toBe(server.url);
      expect(result.html).toContain(`href="${server.url}/integrations/acme-crm"`);
      const csp = result.headers.get('content-security-policy')!;
      expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
      // Scripts: only the nonce's; no inline or outside script, and nothing to connect to.
      expect(csp.split('; ').find((d) => d.startsWith('script-src'))).toMatch(/^script-src 'nonce-[^']+'$/);
      expect(csp).not.toContain('connect-src');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
      expect(result.html).toContain(`<script nonce="${nonce}">`);
      expect(result.html).not.toContain("postMessage(data.message, '*')");

      const id = result.message!.connectionId!;
      expect(await connectionCount(owner.tenantId)).toBe(before + 1);
      const { row, credential } = await storedCredential(id);
      expect(row).toMatchObject({ status: 'connected', profile: 'user_oauth', tenant_id: owner.tenantId });
      expect(credential).toMatchObject({ type: 'oauth', refresh_token: expect.any(String) });
      expect(row.credential_ciphertext).not.toContain((credential as { access_token: string }).access_token);
      expect(row.token_expires_at!.getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
      // The state is spent: nothing of it is left, and it was never stored in the clear.
      expect(
        await store.db.selectFrom('oauth_states').selectAll().where('state_hash', '=', state).execute(),
      ).toEqual([]);

      // The bound tool reads the access token, never the refresh token.
      const { body, connections } = await runtime(owner.appKey);
      const mine = connections.find((c) => c.id === id)!;
      expect(mine.credential).toEqual({
        type: 'oauth',
        access_token: (credential as { access_token: string }).access_token,
        expires_at: row.token_expires_at!.toISOString(),
      });
      expect(JSON.stringify(body)).not.toContain((credential as { refresh_token: string }).refresh_token);
    });

    it('refuses a replayed state without writing a second connection', async () => {
      const { callbackUrl } = await authorize(owner.cookie);
      expect((await callback(owner.cookie, callbackUrl)).message?.status).toBe('connected');
      const count = await connectionCount(owner.tenantId);
      const exchanges = tokenRequests.length;
      const replay = await callback(owner.cookie, callbackUrl);
      expect(replay.status).toBe(400);
      expect(replay.message).toMatchObject({ status: 'error', provider: PROVIDER });
      expect(replay.message?.connectionId).toBeUndefined();
      expect(tokenRequests.length).toBe(exchanges);
      expect(await connectionCount(owner.tenantId)).toBe(count);
    });

    it("refuses another user's state, and the state is spent by the attempt", async () => {
      const other = await signedInOwner(server, 'other@example.test');
      const { callbackUrl } = await authorize(owner.cookie);
      const stolen = await callback(other.cookie, callbackUrl);
      expect(stolen.status).toBe(403);
      expect(stolen.message?.status).toBe('error');
      expect(await connectionCount(other.tenantId)).toBe(0);
      expect((await callback(owner.cookie, callbackUrl)).status).toBe(400);
      // No session at all: 401, in the same page.
      const { callbackUrl: second } = await authorize(owner.cookie);
      const anonymous = await callback(null, second);
      expect(anonymous.status).toBe(401);
      expect(anonymous.message?.status).toBe('error');
    });

    it('refuses a state started in another workspace of the same user', async () => {
      const traveller = await signedInOwner(server, 'traveller@example.test');
      const { callbackUrl } = await authorize(traveller.cookie);
      const made = await asUser(
        traveller.cookie,
        'POST',
        '/api/tenants',
        { name: 'Second' },
        { origin: server.url },
      );
      expect(made.status).toBe(201);
      const page = await callback(traveller.cookie, callbackUrl);
      expect(page.status).toBe(403);
      expect(await connectionCount(traveller.tenantId)).toBe(0);
      expect(tokenRequests).toEqual([]);
    });

    it('refuses an expired state', async () => {
      const { callbackUrl } = await authorize(owner.cookie);
      await store.db
        .updateTable('oauth_states')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .execute();
      const expired = await callback(owner.cookie, callbackUrl);
      expect(expired.status).toBe(400);
      expect(tokenRequests).toEqual([]);
    });

    it("ends a provider's refusal in the page with status error, and writes no connection", async () => {
      oauthProvider.refuseWith('access_denied');
      const count = await connectionCount(owner.tenantId);
      const denied = await connect(owner.cookie, { returnTo: `${server.url}/after` });
      expect(denied.status).toBe(400);
      expect(denied.message).toEqual({
        type: 'service:oauth',
        status: 'error',
        provider: PROVIDER,
        error: 'Access was not granted',
      });
      expect(denied.html).toContain(`href="${server.url}/after"`);
      expect(tokenRequests).toEqual([]);
      expect(await connectionCount(owner.tenantId)).toBe(count);
    });

    it('answers 502 in the page when the token exchange fails', async () => {
      const count = await connectionCount(owner.tenantId);
      tokenAnswer = () => ({ status: 503, body: {} });
      const failed = await connect(owner.cookie);
      expect(failed.status).toBe(502);
      expect(failed.message?.status).toBe('error');
      expect(failed.message?.error).toMatch(/token exchange failed/);
      tokenAnswer = () => ({ status: 400, body: { error: 'invalid_grant' } });
      expect((await connect(owner.cookie)).status).toBe(502);
      tokenAnswer = () => ({ status: 200, body: { token_type: 'Bearer' } });
      expect((await connect(owner.cookie)).status).toBe(502);
      expect(await connectionCount(owner.tenantId)).toBe(count);
    });

    it('escapes what the request carries into the page', async () => {
      const page = await callback(
        owner.cookie,
        `${server.url}/api/oauth/${PROVIDER}/callback?state=x&error=%3C%2Fscript%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E`,
      );
      expect(page.status).toBe(400);
      expect(page.html).not.toContain('<script>alert(1)');
      expect(page.html).not.toMatch(/<\/script><script>/);
    });

    itInBrowser(
      'connects from the dashboard: the integration page sends the browser to the provider and back',
      async () => {
        const browser = await launchChromium();
        try {
          const context = await contextWithCookie(browser, server.url, owner.cookie);
          const page = await context.newPage();
          await page.goto(`${server.url}/integrations/${PROVIDER}`);
          await page.locator('summary', { hasText: 'Connect Acme CRM' }).click();
          // The provider stand-in authorizes at once and sends the browser to the platform's callback.
          await Promise.all([
            page.waitForURL(new RegExp(`/api/oauth/${PROVIDER}/callback`)),
            page.getByRole('button', { name: 'Connect Acme CRM account' }).click(),
          ]);
          expect(tokenRequests.map((request) => request.body.grant_type)).toEqual(['authorization_code']);
          await Promise.all([page.waitForURL(`${server.url}/integrations/${PROVIDER}`), page.click('#back')]);
          const statuses = await page.locator('[data-live="connection-status"]').allTextContents();
          expect(statuses).toContain('connected');
          await context.close();
        } finally {
          await browser.close();
        }
      },
    );

    itInBrowser('posts the outcome to the opening window on the platform origin (Chromium)', async () => {
      const browser = await launchChromium();
      try {
        const context = await contextWithCookie(browser, server.url, owner.cookie);
        const page = await context.newPage();
        await page.goto(`${server.url}/healthz`);
        const received = await page.evaluate(
          (startUrl) =>
            new Promise<{ data: unknown; origin: string; closed: boolean }>((resolve) => {
              const popup = window.open(startUrl, 'oauth', 'popup');
              window.addEventListener('message', (event) => {
                setTimeout(
                  () => resolve({ data: event.data, origin: event.origin, closed: popup?.closed ?? true }),
                  300,
                );
              });
            }),
          `${server.url}${startPath({ appId: owner.appId })}`,
        );
        expect(received.origin).toBe(server.url);
        expect(received.data).toMatchObject({
          type: 'service:oauth',
          status: 'connected',
          provider: PROVIDER,
        });
        expect(received.closed).toBe(true);
        const id = (received.data as { connectionId: string }).connectionId;
        expect((await storedCredential(id)).row.status).toBe('connected');

        // Opened without an opener, the page shows its link back instead.
        const { callbackUrl } = await authorize(owner.cookie);
        const direct = await context.newPage();
        await direct.goto(callbackUrl);
        expect(await direct.locator('#outcome').textContent()).toContain('is connected');
        expect(await direct.locator('#back').getAttribute('href')).toBe(`${server.url}/`);
      } finally {
        await browser.close();
      }
    });
  });

  describe('refusals of start', () => {
    it('refuses unknown providers, non-connectors, the signed-out, viewers and foreign returnTo', async () => {
      expect((await asUser(owner.cookie, 'GET', startPath({}, 'nope'))).status).toBe(404);
      expect((await asUser(owner.cookie, 'GET', startPath({}, 'Bad..Slug'))).status).toBe(404);
      const notConnector = await asUser(owner.cookie, 'GET', startPath({}, 'metered-svc'));
      expect(notConnector.status).toBe(400);
      expect((await notConnector.json()).code).toBe('NOT_A_CONNECTOR');
      expect((await fetch(`${server.url}${startPath()}`, { redirect: 'manual' })).status).toBe(401);
      const viewer = await signedInTeammate(server, owner.tenantId, 'viewer', 'viewer@example.test');
      expect((await asUser(viewer, 'GET', startPath())).status).toBe(403);
      for (const returnTo of [
        'https://evil.example/',
        '//evil.example/x',
        '/\\evil.example',
        'javascript:alert(1)',
        `/${'a'.repeat(3000)}`,
      ]) {
        expect((await asUser(owner.cookie, 'GET', startPath({ returnTo }))).status).toBe(400);
      }
      expect((await asUser(owner.cookie, 'GET', startPath({ appId: 'not-a-uuid' }))).status).toBe(404);
      expect(
        await store.db
          .selectFrom('oauth_states')
          .selectAll()
          .where('tenant_id', '=', owner.tenantId)
          .execute(),
      ).toEqual([]);
    });

    it("refuses another workspace's app and connection ids", async () => {
      const other = await signedInOwner(server, 'rival@example.test');
      const theirs = await connect(other.cookie);
      const theirId = theirs.message!.connectionId!;
      expect((await asUser(owner.cookie, 'GET', startPath({ appId: other.appId }))).status).toBe(404);
      expect((await asUser(owner.cookie, 'GET', startPath({ connectionId: theirId }))).status).toBe(404);
      const disconnect = await asUser(
        owner.cookie,
        'DELETE',
        `/api/oauth/${PROVIDER}/connections/${theirId}`,
      );
      expect(disconnect.status).toBe(404);
      expect((await storedCredential(theirId)).row.status).toBe('connected');
    });

    it('refuses a user more than 20 authorizations in flight', async () => {
      const busy = await signedInOwner(server, 'busy@example.test');
      for (let i = 0; i < 20; i++) {
        expect((await asUser(busy.cookie, 'POST', startPath(), {})).status).toBe(201);
      }
      const refused = await asUser(busy.cookie, 'POST', startPath(), {});
      expect(refused.status).toBe(429);
      expect((await refused.json()).code).toBe('TOO_MANY_AUTHORIZATIONS');
      // Lapsed ones no longer count.
      await store.db
        .updateTable('oauth_states')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .execute();
      expect((await asUser(busy.cookie, 'POST', startPath(), {})).status).toBe(201);
    });

    it('holds a user to 20 authorizations in flight when they start many at once', async () => {
      const eager = await signedInOwner(server, 'eager@example.test');
      const statuses = await Promise.all(
        Array.from({ length: 30 }, async () => (await asUser(eager.cookie, 'POST', startPath(), {})).status),
      );
      expect(statuses.filter((status) => status === 201)).toHaveLength(20);
      expect(statuses.filter((status) => status === 429)).toHaveLength(10);
      const user = await store.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', 'eager@example.test')
        .executeTakeFirstOrThrow();
      const states = await store.db
        .selectFrom('oauth_states')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('user_id', '=', user.id)
        .executeTakeFirstOrThrow();
      expect(Number(states.n)).toBe(20);
    });

    it('answers the authorize URL as JSON to a same-origin POST', async () => {
      const response = await asUser(
        owner.cookie,
        'POST',
        startPath(),
        { returnTo: '/done' },
        { origin: server.url },
      );
      expect(response.status).toBe(201);
      const { authorizeUrl, expiresAt } = await response.json();
      expect(new URL(authorizeUrl).searchParams.get('state')).toBeTruthy();
      const ttl = Date.parse(expiresAt) - Date.now();
      expect(ttl).toBeGreaterThan(9 * 60_000);
      expect(ttl).toBeLessThanOrEqual(10 * 60_000);
      expect((await asUser(owner.cookie, 'POST', startPath(), '{"returnTo":')).status).toBe(400);
      expect((await asUser(owner.cookie, 'POST', startPath(), { returnTo: 7 })).status).toBe(400);
      expect((await asUser(owner.cookie, 'POST', startPath(), { other: 1 })).status).toBe(400);
      expect(
        (await asUser(owner.cookie, 'POST', startPath(), {}, { origin: 'https://evil.example' })).status,
      ).toBe(403);
      expect((await asUser(owner.cookie, 'POST', startPath(), 'x'.repeat(70_000))).status).toBe(413);
    });

    it('refuses a callback with a missing, forged or oversized state', async () => {
      const base = `${server.url}/api/oauth/${PROVIDER}/callback`;
      expect((await callback(owner.cookie, `${base}?code=abc`)).status).toBe(400);
      expect((await callback(owner.cookie, `${base}?code=abc&state=forged`)).status).toBe(400);
      expect((await callback(owner.cookie, `${base}?code=abc&state=${'s'.repeat(5000)}`)).status).toBe(400);
      expect(
        (await callback(owner.cookie, `${server.url}/api/oauth/Bad..Slug/callback?state=x`)).status,
      ).toBe(404);
      expect(tokenRequests).toEqual([]);
    });
  });

  describe('refresh', () => {
    it('renews a token about to expire when the tool reads it, storing the rotated refresh token', async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      const before = (await storedCredential(id)).credential as {
        access_token: string;
        refresh_token: string;
      };
      await expireToken(id);
      tokenRequests = [];
      const { connections } = await runtime(owner.appKey);
      const read = connections.find((c) => c.id === id)!;
      expect(tokenRequests.map((r) => r.body)).toEqual([
        { grant_type: 'refresh_token', refresh_token: before.refresh_token },
      ]);
      const after = (await storedCredential(id)).credential as {
        access_token: string;
        refresh_token: string;
      };
      expect(after.access_token).not.toBe(before.access_token);
      expect(after.refresh_token).not.toBe(before.refresh_token);
      expect(read.credential).toMatchObject({ type: 'oauth', access_token: after.access_token });
      expect(read.status).toBe('connected');
    });

    it('uses a refresh token once when several readers find it due at the same time', async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      await expireToken(id);
      tokenRequests = [];
      const reads = await Promise.all([1, 2, 3, 4].map(() => runtime(owner.appKey)));
      expect(tokenRequests.filter((r) => r.body.grant_type === 'refresh_token')).toHaveLength(1);
      const fresh = ((await storedCredential(id)).credential as { access_token: string }).access_token;
      for (const { connections } of reads) {
        expect(connections.find((c) => c.id === id)!.credential).toMatchObject({ access_token: fresh });
      }
    });

    it('moves the connection to needs_reauth when the provider refuses, and tells the app', async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      const stream = await openSse(`${server.url}/api/deployments/me/events`, {
        authorization: `Bearer ${owner.appKey}`,
      });
      try {
        tokenAnswer = (request) =>
          request.grant_type === 'refresh_token' ? { status: 400, body: { error: 'invalid_grant' } } : null;
        await expireToken(id);
        const { connections } = await runtime(owner.appKey);
        expect(connections.find((c) => c.id === id)).toMatchObject({ status: 'needs_reauth' });
        const { row } = await storedCredential(id);
        expect(row.status).toBe('needs_reauth');
        expect(row.error_message).toMatch(/invalid_grant/);
        await waitFor(() =>
          stream.events.some(
            (e) => e.event === 'connection.status_changed' && JSON.parse(e.data).connection_id === id,
          ),
        );
        const event = stream.events.find(
          (e) => e.event === 'connection.status_changed' && JSON.parse(e.data).connection_id === id,
        )!;
        expect(JSON.parse(event.data)).toMatchObject({
          slug: PROVIDER,
          connection_id: id,
          status: 'needs_reauth',
        });
      } finally {
        stream.close();
      }

      // Reconnecting the same connection brings it back, with new tokens.
      tokenAnswer = null;
      const again = await connect(owner.cookie, { connectionId: id });
      expect(again.message).toMatchObject({ status: 'connected', connectionId: id });
      const { row } = await storedCredential(id);
      expect(row).toMatchObject({ status: 'connected', error_message: null });
      const kinds = (
        await store.db
          .selectFrom('app_events')
          .select(['kind', 'payload'])
          .where('app_id', '=', owner.appId)
          .orderBy('seq', 'desc')
          .limit(2)
          .execute()
      ).map((e) => e.kind);
      expect(kinds).toContain('connection.status_changed');
    });

    it('leaves the connection as it is when the provider is away', async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      tokenAnswer = () => ({ status: 500, body: {} });
      await expireToken(id);
      await runtime(owner.appKey);
      const { row } = await storedCredential(id);
      expect(row.status).toBe('connected');
      expect(row.refresh_claimed_until).toBeNull();
    });

    it("leaves the connection connected when the provider refuses the platform's client", async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      const { refresh_token } = (await storedCredential(id)).credential as { refresh_token: string };
      tokenAnswer = () => ({ status: 401, body: { error: 'invalid_client' } });
      await expireToken(id);
      await runtime(owner.appKey);
      expect(tokenRequests.filter((r) => r.body.refresh_token === refresh_token)).toHaveLength(1);
      expect((await storedCredential(id)).row).toMatchObject({
        status: 'connected',
        refresh_claimed_until: null,
      });
    });

    it('renews tokens on the timer without any read', async () => {
      const { message } = await connect(owner.cookie);
      const id = message!.connectionId!;
      const before = ((await storedCredential(id)).credential as { access_token: string }).access_token;
      await expireToken(id);
      const timed = await startPlatformAtOwnUrl(store, { connectorOAuth: { refreshEveryMs: 50 } });
      try {
        await waitFor(async () => (await storedCredential(id)).row.token_expires_at!.getTime() > Date.now());
        expect(((await storedCredential(id)).credential as { access_token: string }).access_token).not.toBe(
          before,
        );
      } finally {
        await timed.close();
      }
    });
  });

  it('sweeps past a full batch of tokens that cannot be renewed yet', async () => {
    const sweeper = await signedInOwner(server, 'sweeper@example.test');
    // 50 tokens due within the window but without a refresh token (not yet expired: nothing to do).
    const soon = new Date(Date.now() + 60_000);
    for (let i = 0; i < 50; i++) {
      const id = randomUUID();
      const credential = { type: 'oauth', access_token: `a-${i}`, expires_at: soon.toISOString() };
      await store.db
        .insertInto('connections')
        .values({
          id,
          tenant_id: sweeper.tenantId,
          provider: PROVIDER,
          profile: 'user_oauth',
          status: 'connected',
          display_name: 'No refresh',
          credential_ciphertext: sealer.seal(JSON.stringify(credential), `connection:${id}`),
          token_expires_at: soon,
        })
        .execute();
    }
    const { message } = await connect(sweeper.cookie);
    const id = message!.connectionId!;
    await store.db
      .updateTable('connections')
      .set({ token_expires_at: new Date(Date.now() + 120_000) })
      .where('id', '=', id)
      .execute();
    const timed = await startPlatformAtOwnUrl(store, { connectorOAuth: { refreshEveryMs: 50 } });
    try {
      await waitFor(
        async () => (await storedCredential(id)).row.token_expires_at!.getTime() > Date.now() + 600_000,
      );
    } finally {
      await timed.close();
    }
    const untouched = await store.db
      .selectFrom('connections')
      .select('status')
      .where('tenant_id', '=', sweeper.tenantId)
      .where('id', '<>', id)
      .execute();
    expect(untouched).toHaveLength(50);
    expect(untouched.every((row) => row.status === 'connected')).toBe(true);
  });

  describe('disconnecting', () => {
    it('revokes at the provider, marks the connection revoked and wipes its tokens', async () => {
      const { message } = await connect(owner.cookie, { appId: owner.appId });
      const id = message!.connectionId!;
      const response = await asUser(
        owner.cookie,
        'DELETE',
        `/api/oauth/${PROVIDER}/connections/${id}`,
        undefined,
        {
          origin: server.url,
        },
      );
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        id,
        provider: PROVIDER,
        status: 'revoked',
        revokedAtProvider: true,
      });
      expect(revocations).toHaveLength(1);
      expect(revocations[0]!.authorization).toMatch(/^Basic /);
      const { row } = await storedCredential(id);
      expect(row).toMatchObject({ status: 'revoked', credential_ciphertext: null, token_expires_at: null });
      expect((await runtime(owner.appKey)).connections.some((c) => c.id === id)).toBe(false);
      // Again: nothing more to do.
      const again = await asUser(owner.cookie, 'DELETE', `/api/oauth/${PROVIDER}/connections/${id}`);
      expect(await again.json()).toMatchObject({ status: 'revoked', revokedAtProvider: false });
      expect(revocations).toHaveLength(1);
      expect(
        (await asUser(owner.cookie, 'DELETE', `/api/oauth/${PROVIDER}/connections/not-a-uuid`)).status,
      ).toBe(404);
      expect((await asUser(owner.cookie, 'DELETE', `/api/oauth/metered-svc/connections/${id}`)).status).toBe(
        400,
      );
    });
  });
});

async function waitFor(ready: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error('Timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
