/**
 * Property-based fuzzing of every route of the platform (its proxy included) and of the wire,
 * over real HTTP: whatever the path segments, query, body and credentials, the answer is never a
 * 5xx, and every refusal is in the route's documented error shape (docs/errors.md, docs/wire.md).
 * Bounded: a few hundred requests, a few seconds.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mintServiceKey } from '../src/door/index.js';
import { WIRE_ERROR_CODES } from '../src/wire/errors.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';
import { scriptedModel } from './wire/support/models.js';
import { headerPrincipal, ORIGIN, testService } from './wire/support/wire.js';

/** Text that has broken a route before: NUL, lone surrogates, prototype names, traversal, size. */
const nastyText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udc00',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '../../etc/passwd',
    '😀',
    '',
    ' ',
    'a'.repeat(3000),
  ),
);

/** A path segment as sent on the wire: encoded text, or raw encodings that decode badly. */
const segment = (known: string[]) =>
  fc.oneof(
    fc.constantFrom(...known),
    fc.constantFrom('%00', '%ED%A0%80', '%', '%zz', '%C0%80', '__proto__', 'constructor', '..', 'x%2Fy'),
    nastyText
      .map((text) => encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '')))
      .filter((s) => s.length > 0),
  );

/** JSON values with nasty strings at any place, keys included. */
const nastyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    nastyText,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc.dictionary(
    fc.oneof(
      fc.constantFrom(
        'provider',
        'profile',
        'display_name',
        'metadata',
        'credential',
        'name',
        'status',
        'app_id',
        'connection_id',
        'deployment',
        'token',
        'email',
        'decisions',
        'decision',
        'id',
        'message',
        'threadId',
        'daily_micros',
        'model',
        '__proto__',
        'constructor',
      ),
      nastyText,
    ),
    tie('value'),
    { maxKeys: 6 },
  ),
})).object;

const body = fc.oneof(
  nastyJson.map((value) => JSON.stringify(value)),
  fc.constantFrom(
    '',
    '{',
    'null',
    '[]',
    '"x"',
    `{"metadata":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`,
    `${'['.repeat(10_000)}`,
    '{"provider":"llm","display_name":"\\u0000"}',
    '{"provider":"llm","metadata":{"__proto__":{"polluted":true}}}',
  ),
  fc.string({ maxLength: 200 }),
);

type Shape = 'canonical' | 'nested' | 'flat' | 'string' | 'html' | 'events';

interface RouteCase {
  method: string;
  /** Path with `:param` placeholders. */
  path: string;
  shape: Shape;
  /** Answers with a stream or a sign-out on a good credential: fuzz it with bad ones only. */
  badCredentialsOnly?: boolean;
}

const PLATFORM_ROUTES: RouteCase[] = [
  { method: 'GET', path: '/healthz', shape: 'flat' },
  { method: 'GET', path: '/api/billing/balance', shape: 'nested' },
  { method: 'OPTIONS', path: '/api/billing/balance', shape: 'nested' },
  { method: 'GET', path: '/api/v1/balance', shape: 'nested' },
  { method: 'GET', path: '/api/cli/balance', shape: 'flat' },
  { method: 'GET', path: '/api/deployments/me/connections', shape: 'nested' },
  { method: 'GET', path: '/api/deployments/me/events', shape: 'events', badCredentialsOnly: true },
  { method: 'POST', path: '/api/connections', shape: 'flat' },
  { method: 'GET', path: '/api/connections', shape: 'flat' },
  { method: 'GET', path: '/api/connections/:id', shape: 'flat' },
  { method: 'PATCH', path: '/api/connections/:id', shape: 'flat' },
  { method: 'DELETE', path: '/api/connections/:id', shape: 'flat' },
  { method: 'POST', path: '/api/connections/:id/keys', shape: 'flat' },
  { method: 'DELETE', path: '/api/connections/:id/keys/:id', shape: 'flat' },
  { method: 'GET', path: '/api/keys', shape: 'flat' },
  { method: 'POST', path: '/api/keys', shape: 'flat' },
  { method: 'PATCH', path: '/api/keys/:id', shape: 'flat' },
  { method: 'POST', path: '/api/keys/:id/rotate', shape: 'flat' },
  { method: 'DELETE', path: '/api/keys/:id', shape: 'flat' },
  { method: 'POST', path: '/api/deploy', shape: 'flat' },
  { method: 'GET', path: '/api/apps', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id', shape: 'flat' },
  { method: 'PATCH', path: '/api/apps/:id', shape: 'flat' },
  { method: 'DELETE', path: '/api/apps/:id', shape: 'flat' },
  { method: 'POST', path: '/api/apps/:id/redeploy', shape: 'flat' },
  { method: 'POST', path: '/api/apps/:id/stop', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id/connections', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id/deployment', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id/logs', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id/secrets', shape: 'flat' },
  { method: 'GET', path: '/api/apps/:id/callback-origins', shape: 'flat' },
  { method: 'PUT', path: '/api/apps/:id/callback-origins', shape: 'flat' },
  { method: 'GET', path: '/api/deployments/me/connectors', shape: 'flat' },
  { method: 'GET', path: '/api/deployments/me/users/lou/connections', shape: 'flat' },
  { method: 'POST', path: '/api/deployments/me/users/lou/connections', shape: 'flat' },
  { method: 'GET', path: '/api/deployments/me/users/lou/connections/:id', shape: 'flat' },
  { method: 'DELETE', path: '/api/deployments/me/users/lou/connections/:id', shape: 'flat' },
  { method: 'PUT', path: '/api/apps/:id/secrets/:name', shape: 'flat' },
  { method: 'DELETE', path: '/api/apps/:id/secrets/:name', shape: 'flat' },
  { method: 'GET', path: '/apps/:slug/whoami', shape: 'html' },
  { method: 'POST', path: '/apps/:slug', shape: 'html' },
  { method: 'POST', path: '/api/apps/:id/connections', shape: 'flat' },
  { method: 'DELETE', path: '/api/apps/:id/connections/:id', shape: 'flat' },
  { method: 'GET', path: '/api/billing/spend-caps', shape: 'flat' },
  { method: 'PUT', path: '/api/billing/spend-caps', shape: 'flat' },
  { method: 'GET', path: '/api/billing/burn-rate', shape: 'flat' },
  { method: 'GET', path: '/api/billing/usage', shape: 'flat' },
  { method: 'POST', path: '/api/billing/purchase', shape: 'flat' },
  { method: 'GET', path: '/api/billing/transactions', shape: 'flat' },
  { method: 'POST', path: '/api/billing/settle', shape: 'flat' },
  { method: 'GET', path: '/billing', shape: 'html' },
  { method: 'POST', path: '/billing', shape: 'html' },
  { method: 'GET', path: '/', shape: 'html' },
  { method: 'GET', path: '/sign-in', shape: 'html' },
  { method: 'POST', path: '/sign-out', shape: 'html' },
  { method: 'GET', path: '/dashboard/live', shape: 'flat' },
  { method: 'GET', path: '/static/dashboard/:slug', shape: 'flat' },
  { method: 'POST', path: '/keys', shape: 'html' },
  { method: 'POST', path: '/integrations/:slug', shape: 'html' },
  { method: 'GET', path: '/tools/:slug/deploy', shape: 'html' },
  { method: 'POST', path: '/tools/:slug/deploy', shape: 'html' },
  { method: 'GET', path: '/deployments/:id', shape: 'html' },
  { method: 'POST', path: '/deployments/:id', shape: 'html' },
  { method: 'POST', path: '/members', shape: 'html' },
  { method: 'POST', path: '/settings', shape: 'html' },
  { method: 'GET', path: '/pricing', shape: 'html' },
  { method: 'POST', path: '/billing/purchase', shape: 'html' },
  { method: 'GET', path: '/billing/purchases/:id', shape: 'html' },
  { method: 'POST', path: '/billing/purchases/:id', shape: 'html' },
  { method: 'GET', path: '/api/deployments/:id/usage', shape: 'flat' },
  { method: 'GET', path: '/api/integrations/:slug/usage', shape: 'flat' },
  { method: 'GET', path: '/api/integrations', shape: 'flat' },
  { method: 'GET', path: '/api/integrations/:slug', shape: 'flat' },
  { method: 'POST', path: '/api/integrations/:slug', shape: 'flat' },
  { method: 'POST', path: '/api/integrations/:slug/regenerate', shape: 'flat' },
  { method: 'PATCH', path: '/api/admin/integrations/:slug', shape: 'flat' },
  { method: 'GET', path: '/api/pricing/models', shape: 'flat' },
  { method: 'GET', path: '/api/pricing/integrations', shape: 'flat' },
  { method: 'GET', path: '/api/pricing/public/:slug', shape: 'flat' },
  { method: 'GET', path: '/static/integrations/:slug', shape: 'html' },
  { method: 'GET', path: '/static/tools/:slug', shape: 'html' },
  { method: 'GET', path: '/docs/integrations/:slug', shape: 'html' },
  { method: 'GET', path: '/proxy/:slug/v1/models', shape: 'canonical' },
  { method: 'POST', path: '/proxy/:slug/v1/chat/completions', shape: 'canonical' },
  { method: 'GET', path: '/proxy/:slug/search', shape: 'canonical' },
  { method: 'GET', path: '/api/auth/me', shape: 'flat' },
  { method: 'POST', path: '/api/auth/session', shape: 'flat' },
  { method: 'DELETE', path: '/api/auth/session', shape: 'flat', badCredentialsOnly: true },
  { method: 'POST', path: '/api/auth/sign-out', shape: 'flat', badCredentialsOnly: true },
  { method: 'GET', path: '/dev/cli-bootstrap', shape: 'html' },
  { method: 'POST', path: '/dev/cli-bootstrap', shape: 'html' },
  { method: 'GET', path: '/api/cli/whoami', shape: 'flat' },
  { method: 'POST', path: '/api/cli/logout', shape: 'flat', badCredentialsOnly: true },
  { method: 'POST', path: '/api/cli/ssh-sessions', shape: 'flat' },
  { method: 'POST', path: '/api/cli/ssh-sessions/claim', shape: 'flat' },
  { method: 'GET', path: '/auth/v1/.well-known/jwks.json', shape: 'flat' },
  { method: 'POST', path: '/auth/v1/token', shape: 'flat' },
  { method: 'GET', path: '/auth/v1/sign-in', shape: 'html' },
  { method: 'POST', path: '/auth/v1/sign-in', shape: 'html' },
  { method: 'GET', path: '/api/admin/tenants', shape: 'flat' },
  { method: 'GET', path: '/api/admin/tenants/:id', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tenants/:id/grants', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tenants/:id/suspend', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tenants/:id/resume', shape: 'flat' },
  { method: 'GET', path: '/api/admin/tools', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tools', shape: 'flat' },
  { method: 'PATCH', path: '/api/admin/tools/:id', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tools/:id/releases', shape: 'flat' },
  { method: 'POST', path: '/api/admin/tools/:id/releases/:id/withdraw', shape: 'flat' },
  { method: 'GET', path: '/api/tools/catalog', shape: 'flat' },
  { method: 'GET', path: '/api/tools/deployable', shape: 'flat' },
  { method: 'GET', path: '/api/tools/:id', shape: 'string' },
  { method: 'GET', path: '/api/tools/:id/usage-framing', shape: 'string' },
  { method: 'GET', path: '/api/tools/:id/integrations', shape: 'flat' },
  { method: 'GET', path: '/api/billing/customer', shape: 'flat' },
  { method: 'PATCH', path: '/api/billing/customer', shape: 'flat' },
  { method: 'POST', path: '/api/billing/setup-intent', shape: 'flat' },
  { method: 'POST', path: '/api/billing/portal', shape: 'flat' },
  { method: 'POST', path: '/api/billing/reload', shape: 'flat' },
  { method: 'POST', path: '/api/billing/webhook', shape: 'flat' },
  { method: 'GET', path: '/api/oauth/:slug/start', shape: 'flat' },
  { method: 'POST', path: '/api/oauth/:slug/start', shape: 'flat' },
  { method: 'GET', path: '/api/oauth/:slug/callback', shape: 'html' },
  { method: 'DELETE', path: '/api/oauth/:slug/connections/:id', shape: 'flat' },
  { method: 'GET', path: '/api/admin/integrations/:slug/oauth', shape: 'flat' },
  { method: 'PUT', path: '/api/admin/integrations/:slug/oauth', shape: 'flat' },
  { method: 'DELETE', path: '/api/admin/integrations/:slug/oauth', shape: 'flat' },
  { method: 'GET', path: '/no/such/route', shape: 'flat' },
  { method: 'GET', path: '/api/user/me', shape: 'flat' },
  { method: 'PATCH', path: '/api/user/me', shape: 'flat' },
  { method: 'GET', path: '/api/tenants/me', shape: 'flat' },
  { method: 'PATCH', path: '/api/tenants/me', shape: 'flat' },
  { method: 'GET', path: '/api/tenants', shape: 'flat' },
  { method: 'POST', path: '/api/tenants', shape: 'flat' },
  { method: 'POST', path: '/api/tenants/switch', shape: 'flat' },
  { method: 'GET', path: '/api/tenants/me/members', shape: 'flat' },
  { method: 'PATCH', path: '/api/tenants/me/members/:id', shape: 'flat' },
  { method: 'DELETE', path: '/api/tenants/me/members/:id', shape: 'flat' },
  { method: 'GET', path: '/api/tenants/me/invitations', shape: 'flat' },
  { method: 'POST', path: '/api/tenants/me/invitations', shape: 'flat' },
  { method: 'DELETE', path: '/api/tenants/me/invitations/:id', shape: 'flat' },
  { method: 'GET', path: '/invitations/accept', shape: 'html' },
  { method: 'POST', path: '/invitations/accept', shape: 'html' },
  { method: 'GET', path: '/dev/mailbox', shape: 'html' },
];

const WIRE_ROUTES: RouteCase[] = [
  ['GET', '/status'],
  ['GET', '/threads'],
  ['GET', '/threads/:id'],
  ['DELETE', '/threads/:id'],
  ['GET', '/threads/:id/stream'],
  ['GET', '/runs'],
  ['GET', '/runs/:id'],
  ['POST', '/runs/:id/stop'],
  ['POST', '/runs/:id/rerun'],
  ['GET', '/runs/:id/stream'],
  ['GET', '/automations'],
  ['POST', '/automations'],
  ['GET', '/automations/:id'],
  ['PATCH', '/automations/:id'],
  ['DELETE', '/automations/:id'],
  ['POST', '/automations/:id/pause'],
  ['POST', '/automations/:id/resume'],
  ['GET', '/approvals'],
  ['POST', '/approvals/decide'],
  ['GET', '/approvals/:id'],
  ['POST', '/approvals/:id/decide'],
  ['GET', '/grants'],
  ['DELETE', '/grants/:id'],
  ['GET', '/activity'],
  ['GET', '/connections/:id'],
  ['POST', '/files'],
  ['GET', '/files'],
  ['GET', '/files/:id'],
  ['GET', '/files/:id/content'],
  ['DELETE', '/files/:id'],
  ['GET', '/connections'],
  ['POST', '/connections'],
  ['POST', '/orgs/switch'],
  ['POST', '/channels/text'],
  ['POST', '/tick'],
  ['POST', '/webhooks/:id'],
  ['GET', '/doctor/base-url'],
  ['POST', '/doctor/present'],
  ['POST', '/doctor/act-as'],
  ['POST', '/sync/impact'],
  ['GET', '/orgs'],
  ['GET', '/orgs/:id/members'],
  ['GET', '/channels/text'],
  ['DELETE', '/channels/text/:id'],
  ['POST', '/channels/text/:id/send'],
  ['GET', '/connections/catalog'],
  ['DELETE', '/connections/:id'],
  ['GET', '/apps'],
  ['GET', '/apps/:id'],
  ['DELETE', '/apps/:id'],
  ['GET', '/apps/:id/history'],
  ['POST', '/apps/:id/fork'],
  ['GET', '/apps/:id/export'],
  ['POST', '/apps/:id/open'],
  ['POST', '/apps/:id/call'],
  ['POST', '/apps/:id/rebase-pin'],
  ['GET', '/apps/placements'],
  ['PUT', '/apps/placements'],
  ['DELETE', '/apps/placements'],
  ['POST', '/apps/seed'],
  ['POST', '/apps/import'],
  ['GET', '/apps/review-queue'],
  ['GET', '/apps/review-queue/:id'],
  ['POST', '/apps/review-queue/:id/approve'],
  ['POST', '/apps/review-queue/:id/reject'],
  ['POST', '/slots'],
  ['GET', '/slots'],
  ['GET', '/chat/:id/stream'],
  ['GET', '/no/such/route'],
].map(([method, path]) => ({ method: method!, path: path!, shape: 'canonical' as const }));

/** Checks an answer against its route's shape; a 2xx or 3xx is fine as it is. */
async function expectShaped(route: RouteCase, response: Response, wire: boolean): Promise<void> {
  const label = `${route.method} ${route.path} -> ${response.status}`;
  // The one documented 5xx a request can choose: a wire route this composition does not offer.
  const notOffered =
    wire && response.status === 501 && response.headers.get('service-error-code') === 'not_implemented';
  if (!notOffered) expect(response.status, label).toBeLessThan(500);
  if (response.status < 400) {
    await response.body?.cancel();
    return;
  }
  const type = response.headers.get('content-type') ?? '';
  if (route.shape === 'html' && type.includes('text/html')) {
    await response.body?.cancel();
    return;
  }
  // A proxied call passes the upstream's own refusals through; ours carry Service-Error-Code.
  if (route.path.startsWith('/proxy/') && !response.headers.has('service-error-code')) {
    await response.body?.cancel();
    return;
  }
  expect(type, label).toContain('application/json');
  const body = (await response.json()) as {
    message?: unknown;
    error?: { code?: unknown; message?: unknown };
  };
  const canonical = () => {
    expect(typeof body.error?.code, label).toBe('string');
    expect(typeof body.error?.message, label).toBe('string');
    expect(response.headers.get('service-error-code'), label).toBe(body.error?.code);
    if (wire) expect(Object.keys(WIRE_ERROR_CODES), label).toContain(body.error?.code);
  };
  const nested = () => {
    expect(Object.keys(body), label).toEqual(['error']);
    expect(typeof body.error?.message, label).toBe('string');
  };
  switch (route.shape) {
    case 'canonical':
      return canonical();
    case 'nested':
      return nested();
    case 'string':
      expect(Object.keys(body), label).toEqual(['error']);
      expect(typeof body.error, label).toBe('string');
      return;
    case 'events':
      // 401s nested, the stream's refusals (429, 400) canonical.
      return response.status === 401 ? nested() : canonical();
    default:
      expect(typeof body.message, label).toBe('string');
  }
}

describe('fuzzing every route', () => {
  let store: TestStore;
  let upstream: FakeUpstream;
  let platform: RunningPlatform;
  let tenant: MeteredTenant;
  let cookie: string;
  let wireUrl: string;
  let closeWire: () => Promise<void>;
  let wireService: Awaited<ReturnType<typeof testService>>;

  beforeAll(async () => {
    store = await openTestStore();
    upstream = await startFakeUpstream();
    const unlimited = { limit: 1_000_000, windowMs: 60_000 };
    // Limits high enough that the fuzzer reaches past authentication on every run.
    platform = await startPlatform(store, {
      rateLimits: {
        failedCredentials: unlimited,
        billingBalance: unlimited,
        v1Balance: unlimited,
        cliBalance: unlimited,
        deploy: unlimited,
        integrations: unlimited,
      },
      // A gateway listing that answers, so the model catalog's one documented 5xx (502) is not drawn.
      pricing: { modelsUrl: `${upstream.url}/v1/models` },
      // The fuzzing user is a platform admin too, so the admin routes are reached past their check.
      adminEmails: ['fuzz@example.com'],
    });
    await seedProviders(platform.platform, upstream.url);
    tenant = await createMeteredTenant(platform.platform, 10_000_000);
    const { token } = await platform.platform.devIdp!.issueToken({ email: 'fuzz@example.com' });
    const signedIn = await fetch(`${platform.url}/api/auth/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;

    // Every optional family composed, so the fuzz reaches their routes too.
    wireService = await testService(store, {
      apps: { reviewer: () => true },
      channels: [{ name: 'test', send: async () => {} }],
      orgs: {
        kind: 'byo',
        list: async () => [{ id: 'acme', name: 'Acme', role: 'member' }],
        members: async () => [],
      },
      connections: {
        kind: 'byo',
        catalog: async () => [],
        list: async () => [],
        initiate: async () => null,
        get: async () => null,
        disconnect: async () => null,
      },
    });
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: wireService.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    wireUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/service`;
    closeWire = () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      });
  });
  afterAll(async () => {
    await closeWire?.();
    await wireService?.close();
    await platform?.close();
    await upstream?.close();
    await store?.dispose();
  });

  const fill = (path: string, segments: string[]) => {
    let i = 0;
    return path.replace(/:[a-z]+/g, () => segments[i++ % segments.length]!);
  };
  const query = fc.array(
    fc.tuple(
      segment(['range', 'days', 'cb', 'mode', 'thread', 'limit', 'x']),
      segment(['24h', '7', '30', 'constructor']),
    ),
    {
      maxLength: 3,
    },
  );

  it('never answers 5xx on the platform, and refuses in each route’s shape', async () => {
    // Mostly good credentials, so the fuzzer gets past authentication to the parsing behind it.
    const credentials = () =>
      fc.oneof(
        {
          arbitrary: fc.constantFrom<Record<string, string>>(
            { authorization: `Bearer ${tenant.appKey}` },
            { authorization: `Bearer ${tenant.cliKey}` },
            { cookie },
          ),
          weight: 4,
        },
        {
          arbitrary: fc.constantFrom<Record<string, string>>(
            {},
            { authorization: 'Bearer service_sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
            { authorization: 'Bearer a.b.c' },
            { authorization: 'Basic Zm9vOmJhcg==' },
            { cookie: 'service_session=garbage' },
          ),
          weight: 1,
        },
      );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PLATFORM_ROUTES),
        fc.array(segment([tenant.appId, tenant.connectionId, tenant.llmConnectionId, 'llm', 'search']), {
          minLength: 2,
          maxLength: 2,
        }),
        query,
        body,
        credentials(),
        fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain'),
        async (route, segments, params, text, auth, contentType) => {
          const safeAuth =
            route.badCredentialsOnly &&
            (auth.cookie === cookie || auth.authorization?.includes(tenant.cliKey))
              ? {}
              : auth;
          const search = params.map(([k, v]) => `${k}=${v}`).join('&');
          const hasBody = !['GET', 'HEAD', 'OPTIONS'].includes(route.method);
          const url = `${platform.url}${fill(route.path, segments)}${search ? `?${search}` : ''}`;
          const response = await fetch(url, {
            method: route.method,
            headers: { ...safeAuth, 'content-type': contentType, origin: platform.url },
            ...(hasBody ? { body: text } : {}),
            signal: AbortSignal.timeout(5000),
          });
          // A `.` or `..` segment is resolved by the client: the request reaches another path,
          // which answers in its own shape: a provider's path as the proxy does, a path that does
          // not take the method with the canonical 405, any other in the platform's default (flat).
          const reached = new URL(url).pathname;
          const resolved = reached.split('/').length === route.path.split('/').length;
          const elsewhere: Shape = response.status === 405 ? 'canonical' : 'flat';
          await expectShaped(
            resolved || reached.startsWith('/proxy/') ? route : { ...route, shape: elsewhere },
            response,
            false,
          );
        },
      ),
      { numRuns: 600 },
    );
  });

  it('never answers 5xx on the wire, and refuses in its envelope with a registered code', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...WIRE_ROUTES),
        fc.array(
          segment(['00000000-0000-4000-8000-000000000000', 'thread-1', 'app_0000000000000000000000']),
          {
            minLength: 2,
            maxLength: 2,
          },
        ),
        query,
        body,
        fc.constantFrom<Record<string, string>>(
          {},
          { 'x-test-user': 'ada' },
          { 'x-test-user': 'service:root' },
        ),
        fc.constantFrom('application/json', 'text/plain'),
        async (route, segments, params, text, user, contentType) => {
          const search = params.map(([k, v]) => `${k}=${v}`).join('&');
          const hasBody = !['GET', 'HEAD'].includes(route.method);
          const response = await fetch(
            `${wireUrl}${fill(route.path, segments)}${search ? `?${search}` : ''}`,
            {
              method: route.method,
              headers: { ...user, 'content-type': contentType },
              ...(hasBody ? { body: text } : {}),
              signal: AbortSignal.timeout(5000),
            },
          );
          await expectShaped(route, response, true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * How a door route refuses: OAuth's `{ error, error_description }`, JSON-RPC, or (`page`) an HTML
 * page for the user where the route renders one, else OAuth's JSON.
 */
type DoorShape = 'oauth' | 'jsonrpc' | 'page';

interface DoorCase {
  method: string;
  path: string;
  shape: DoorShape;
  /** What the request carries: a JSON-RPC message, client metadata, an OAuth form, a query. */
  input: 'jsonrpc' | 'metadata' | 'token' | 'revoke' | 'consent' | 'authorize' | 'federation' | 'query';
  /** The content type a well-behaved client sends (the fuzzer mostly sends it, sometimes not). */
  type?: string;
}

const MCP = '/api/service/mcp';
const FORM = 'application/x-www-form-urlencoded';
const DOOR_ROUTES: DoorCase[] = [
  { method: 'POST', path: MCP, shape: 'jsonrpc', input: 'jsonrpc', type: 'application/json' },
  { method: 'GET', path: MCP, shape: 'jsonrpc', input: 'query' },
  { method: 'DELETE', path: MCP, shape: 'jsonrpc', input: 'query' },
  { method: 'OPTIONS', path: MCP, shape: 'jsonrpc', input: 'query' },
  { method: 'POST', path: `${MCP}/register`, shape: 'oauth', input: 'metadata', type: 'application/json' },
  { method: 'PUT', path: `${MCP}/register`, shape: 'oauth', input: 'metadata', type: 'application/json' },
  { method: 'POST', path: `${MCP}/token`, shape: 'oauth', input: 'token', type: FORM },
  { method: 'POST', path: `${MCP}/revoke`, shape: 'oauth', input: 'revoke', type: FORM },
  // Refusals before the redirect URI is trusted are a page for the user, as are the consent
  // form's refusals and a user who cannot consent (their account does not resolve).
  { method: 'GET', path: `${MCP}/authorize`, shape: 'page', input: 'authorize' },
  { method: 'POST', path: `${MCP}/authorize`, shape: 'page', input: 'consent', type: FORM },
  { method: 'GET', path: `${MCP}/connect`, shape: 'page', input: 'query' },
  { method: 'POST', path: `${MCP}/connect`, shape: 'page', input: 'consent', type: FORM },
  { method: 'GET', path: `${MCP}/federate`, shape: 'oauth', input: 'federation' },
  { method: 'GET', path: `${MCP}/.well-known/oauth-protected-resource`, shape: 'oauth', input: 'query' },
  { method: 'GET', path: `${MCP}/.well-known/oauth-authorization-server`, shape: 'oauth', input: 'query' },
  { method: 'GET', path: `${MCP}/no/such/door/path`, shape: 'oauth', input: 'query' },
  {
    method: 'GET',
    path: '/.well-known/oauth-protected-resource/api/service/mcp',
    shape: 'oauth',
    input: 'query',
  },
  {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server/api/service/mcp',
    shape: 'oauth',
    input: 'query',
  },
  { method: 'GET', path: '/.well-known/mcp/server-card.json', shape: 'oauth', input: 'query' },
  { method: 'GET', path: '/.well-known/mcp-server-card', shape: 'oauth', input: 'query' },
];
/** The transport gets most of the runs: it is where a body reaches tools and the store. */
const DOOR_ROUTE_WEIGHTS: Record<string, number> = { [`POST ${MCP}`]: 12, [`POST ${MCP}/token`]: 3 };

const OAUTH_FIELDS = [
  'grant_type',
  'client_id',
  'client_secret',
  'code',
  'code_verifier',
  'redirect_uri',
  'refresh_token',
  'subject_token',
  'subject_token_type',
  'scope',
  'resource',
  'token',
  'token_type_hint',
  'response_type',
  'state',
  'code_challenge',
  'code_challenge_method',
  'transaction',
  'csrf_token',
  'decision',
];

/** Checks a door answer: never a 5xx, and every refusal with a body in the route's shape. */
async function expectDoorShaped(route: DoorCase, response: Response): Promise<void> {
  const label = `${route.method} ${route.path} -> ${response.status}`;
  expect(response.status, label).toBeLessThan(500);
  const text = await response.text();
  // Successes, redirects and a bare 405 (with its Allow header) carry nothing to check.
  if (response.status < 400 || text === '') return;
  const type = response.headers.get('content-type') ?? '';
  if (route.shape === 'page' && type.includes('text/html')) return;
  expect(type, label).toContain('application/json');
  const body = JSON.parse(text) as Record<string, unknown>;
  // The transport's bearer challenges (401, and 403 insufficient_scope) are OAuth's shape, as RFC 6750 has it.
  if (route.shape === 'jsonrpc' && !response.headers.has('www-authenticate')) {
    expect(body.jsonrpc, label).toBe('2.0');
    const error = body.error as { code?: unknown; message?: unknown } | undefined;
    expect(typeof error?.code, label).toBe('number');
    expect(typeof error?.message, label).toBe('string');
    return;
  }
  expect(typeof body.error, label).toBe('string');
  expect(typeof body.error_description, label).toBe('string');
}

describe('fuzzing the MCP door and the wire’s /chat', () => {
  const FEDERATION_SECRET = 'fuzz-federation-secret-of-at-least-32-characters';
  const ISSUER = 'https://broker.example';
  const REDIRECT = 'http://127.0.0.1:9/callback';
  const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGKSEFYAU0';
  const serviceKey = mintServiceKey();
  let store: TestStore;
  let service: Awaited<ReturnType<typeof testService>>;
  let url: string;
  let closeServer: () => Promise<void>;
  let accessToken: string;
  let sessionId: string;
  let clientId: string;

  beforeAll(async () => {
    store = await openTestStore();
    service = await testService(store, {
      mcp: {
        productName: 'Fuzz',
        serviceAuth: { keys: [serviceKey], clientId: 'fuzz-backend' },
        federation: { secret: FEDERATION_SECRET },
      },
      oauth: {
        // Signed in when the request names a user; else the host's login redirect.
        session: (request: Request) => {
          const subject = request.headers.get('x-test-user');
          return subject ? { subject } : new Response(null, { status: 302, headers: { location: '/login' } });
        },
        principal: (subject: string) => (subject === 'gone' ? null : { subject }),
      },
      actAs: async () => ({ headers: {} }),
      // The canonical URL is configured, never taken from the request: any origin serves it.
      env: { SERVICE_BASE_URL: ORIGIN },
      model: scriptedModel([{ text: ['fine'] }]).model,
      principal: headerPrincipal,
      tools: [
        {
          name: 'lookup',
          description: 'Looks up',
          input: z.object({ q: z.string().optional() }),
          risk: 'read',
          execute: (input: { q?: string }) => ({ found: input.q ?? null }),
        },
      ],
    });
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve(
        {
          // Mounted as the adapters mount it: the origin-root discovery paths first.
          fetch: async (request) => (await service.wellKnown(request)) ?? service.fetch(request),
          port: 0,
          hostname: '127.0.0.1',
        },
        () => resolve(s),
      );
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    closeServer = () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      });
    // A real access token, an MCP session and a registered client: the fuzzer gets past each gate.
    const token = await fetch(`${url}${MCP}/token`, {
      method: 'POST',
      headers: { 'content-type': FORM },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        client_id: 'fuzz-backend',
        client_secret: serviceKey,
        subject_token: 'ada',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      }),
    });
    accessToken = ((await token.json()) as { access_token: string }).access_token;
    const initialized = await fetch(`${url}${MCP}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'fuzz', version: '1' },
        },
      }),
    });
    sessionId = initialized.headers.get('mcp-session-id')!;
    await initialized.text();
    const registered = await fetch(`${url}${MCP}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'fuzz' }),
    });
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  }, 30_000);
  afterAll(async () => {
    await closeServer?.();
    await service?.close();
    await store?.dispose();
  });

  /** Pairs from a good request with some replaced by nasty ones, some repeated, some added. */
  const mutatedPairs = (good: () => Array<[string, string]>) =>
    fc
      .record({
        base: fc.boolean(),
        changes: fc.array(
          fc.tuple(
            fc.oneof(fc.constantFrom(...OAUTH_FIELDS), nastyText),
            nastyText,
            fc.constantFrom<'set' | 'append' | 'delete'>('set', 'append', 'delete'),
          ),
          { maxLength: 3 },
        ),
      })
      .map(({ base, changes }) => {
        const params = new URLSearchParams(base ? good() : []);
        for (const [name, value, how] of changes) {
          if (how === 'set') params.set(name, value);
          else if (how === 'append') params.append(name, value);
          else params.delete(name);
        }
        return params.toString();
      });
  /** Form text: mutated good requests, or raw text with encodings that decode badly. */
  const formText = (good: () => Array<[string, string]>) =>
    fc.oneof(
      { arbitrary: mutatedPairs(good), weight: 5 },
      {
        arbitrary: fc.constantFrom(
          'client_id=%00',
          'token=a%00b&client_id=x',
          'grant_type=%ED%A0%80',
          '%zz=%',
          'a=1&a=2',
          '=&=&&',
          `state=${'x'.repeat(20_000)}`,
        ),
        weight: 1,
      },
      { arbitrary: body, weight: 1 },
    );
  const tokenForms = (): Array<[string, string]> => [
    ['grant_type', 'urn:ietf:params:oauth:grant-type:token-exchange'],
    ['client_id', 'fuzz-backend'],
    ['client_secret', serviceKey],
    ['subject_token', 'ada'],
    ['subject_token_type', 'urn:ietf:params:oauth:token-type:access_token'],
  ];
  const refreshForm = (): Array<[string, string]> => [
    ['grant_type', 'refresh_token'],
    ['client_id', clientId],
    ['refresh_token', 'mcp_rt_unknown'],
  ];
  const codeForm = (): Array<[string, string]> => [
    ['grant_type', 'authorization_code'],
    ['client_id', clientId],
    ['code', 'mcp_code_unknown'],
    ['redirect_uri', REDIRECT],
    ['code_verifier', 'v'.repeat(43)],
  ];
  // Revoking the suite's own token would end the fuzzing early: a token of another client's.
  const revokeForm = (): Array<[string, string]> => [
    ['token', 'mcp_at_unknown'],
    ['client_id', clientId],
  ];
  const authorizeQuery = (): Array<[string, string]> => [
    ['client_id', clientId],
    ['redirect_uri', REDIRECT],
    ['response_type', 'code'],
    ['code_challenge', CHALLENGE],
    ['code_challenge_method', 'S256'],
    ['state', 'st'],
    ['scope', 'read'],
  ];
  const consentForm = (): Array<[string, string]> => [
    ['transaction', 'tx'],
    ['csrf_token', 'csrf'],
    ['decision', 'approve'],
  ];
  const metadataText = fc.oneof(
    fc
      .record(
        {
          redirect_uris: fc.oneof(fc.constant([REDIRECT]), fc.array(nastyText, { maxLength: 3 }), nastyJson),
          client_name: fc.oneof(nastyText, nastyJson),
          grant_types: fc.array(fc.constantFrom('authorization_code', 'refresh_token', 'x'), {
            maxLength: 3,
          }),
          scope: nastyText,
          token_endpoint_auth_method: fc.constantFrom('none', 'client_secret_post', 'x'),
          client_uri: nastyText,
          software_id: nastyJson,
        },
        { requiredKeys: [] },
      )
      .map((value) => JSON.stringify(value)),
    body,
  );
  const jsonRpcText = fc.oneof(
    {
      arbitrary: fc
        .record(
          {
            jsonrpc: fc.oneof({ arbitrary: fc.constant('2.0'), weight: 5 }, nastyText),
            id: fc.oneof(fc.integer(), nastyText, fc.constant(null)),
            method: fc.oneof(
              {
                arbitrary: fc.constantFrom(
                  'initialize',
                  'tools/list',
                  'tools/call',
                  'tools/call',
                  'ping',
                  'notifications/initialized',
                ),
                weight: 5,
              },
              nastyText,
            ),
            params: fc.oneof(
              fc.record({
                name: fc.oneof({ arbitrary: fc.constant('lookup'), weight: 4 }, nastyText),
                arguments: fc.oneof(nastyJson, fc.record({ q: nastyText })),
                _meta: fc.oneof(nastyJson, fc.record({ progressToken: nastyText })),
              }),
              fc.constant({
                protocolVersion: '2025-06-18',
                capabilities: {},
                clientInfo: { name: 'fuzz', version: '1' },
              }),
              nastyJson,
            ),
          },
          { requiredKeys: ['jsonrpc', 'method', 'id'] },
        )
        .map((message) => JSON.stringify(message)),
      weight: 6,
    },
    { arbitrary: body, weight: 1 },
    {
      arbitrary: fc.constantFrom(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":${'['.repeat(5000)}}}`,
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"a\\u0000b"}}}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}',
        '{"jsonrpc":"2.0","id":"\\u0000","method":"ping"}',
        '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]',
        '[]',
        '',
      ),
      weight: 1,
    },
  );
  /** Federation claims: a good request with fields replaced, or junk. */
  const federationClaims = fc.oneof(
    {
      arbitrary: fc.record(
        {
          iss: fc.oneof({ arbitrary: fc.constant(ISSUER), weight: 3 }, nastyText),
          jti: fc.oneof({ arbitrary: fc.uuid(), weight: 3 }, nastyText),
          redirect_uri: fc.oneof({ arbitrary: fc.constant(`${ISSUER}/callback`), weight: 3 }, nastyText),
          scopes: fc.oneof(
            { arbitrary: fc.constant(['read']), weight: 3 },
            fc.array(nastyText, { maxLength: 2 }),
            nastyJson,
          ),
          client_name: fc.oneof({ arbitrary: fc.constant('Broker'), weight: 3 }, nastyText, nastyJson),
        },
        { requiredKeys: [] },
      ),
      weight: 4,
    },
    nastyJson,
  );

  it('never answers 5xx on the door, and refuses in OAuth’s or JSON-RPC’s shape', async () => {
    const secret = new TextEncoder().encode(FEDERATION_SECRET);
    const federationRequest = async (claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setAudience(`${ORIGIN}${MCP}`)
        .setExpirationTime(Math.floor(Date.now() / 1000) + 60)
        .sign(secret);
    const routes = DOOR_ROUTES.map((route) => ({
      arbitrary: fc.constant(route),
      weight: DOOR_ROUTE_WEIGHTS[`${route.method} ${route.path}`] ?? 1,
    }));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(...routes),
        fc.record({
          jsonrpc: jsonRpcText,
          metadata: metadataText,
          token: fc.oneof(formText(tokenForms), formText(refreshForm), formText(codeForm)),
          revoke: formText(revokeForm),
          consent: formText(consentForm),
          authorize: mutatedPairs(authorizeQuery),
          query: mutatedPairs(() => []),
          federation: federationClaims,
        }),
        fc.oneof(
          {
            arbitrary: fc.constantFrom<Record<string, string>>(
              { authorization: `Bearer ${accessToken}` },
              { authorization: `Bearer ${accessToken}`, 'mcp-session-id': sessionId },
              // Signed in at the host (consent, federation) and holding a token (the transport).
              { authorization: `Bearer ${accessToken}`, 'x-test-user': 'ada' },
            ),
            weight: 6,
          },
          fc.constantFrom<Record<string, string>>(
            { authorization: `Bearer ${accessToken}`, 'mcp-session-id': 'mcp_ses_unknown' },
            { authorization: `Bearer ${accessToken}`, 'mcp-protocol-version': '2099-01-01' },
            { authorization: `Bearer ${accessToken}`, origin: 'https://evil.example' },
            { authorization: 'Bearer mcp_at_forged' },
            { authorization: 'Basic Zm9vOmJhcg==' },
            { 'x-test-user': 'gone' },
            {},
          ),
        ),
        fc.oneof(
          { arbitrary: fc.constant(null), weight: 5 },
          fc.constantFrom('application/json', FORM, 'text/plain', 'application/json; charset=utf-8'),
        ),
        fc.oneof(
          { arbitrary: fc.constant('application/json, text/event-stream'), weight: 5 },
          fc.constantFrom('application/json', '*/*', 'text/html'),
        ),
        async (route, inputs, credentials, otherType, accept) => {
          let search = '';
          let text: string | undefined;
          switch (route.input) {
            case 'authorize':
            case 'query':
              search = inputs[route.input];
              break;
            case 'federation':
              search = `request=${encodeURIComponent(await federationRequest(inputs.federation as Record<string, unknown>))}`;
              break;
            default:
              text = inputs[route.input];
          }
          // Ending the suite's live session would turn every later request with it into a 404.
          const headers: Record<string, string> =
            route.method === 'DELETE' && credentials['mcp-session-id'] === sessionId
              ? { ...credentials, 'mcp-session-id': 'mcp_ses_unknown' }
              : { ...credentials };
          const type = otherType ?? route.type ?? 'application/json';
          const hasBody = text !== undefined && !['GET', 'HEAD', 'OPTIONS'].includes(route.method);
          const response = await fetch(`${url}${route.path}${search ? `?${search}` : ''}`, {
            method: route.method,
            headers: { ...headers, 'content-type': type, accept },
            ...(hasBody ? { body: text } : {}),
            redirect: 'manual',
            signal: AbortSignal.timeout(5000),
          });
          await expectDoorShaped(route, response);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never answers 5xx on POST /chat, and refuses in the wire’s envelope', async () => {
    const route: RouteCase = { method: 'POST', path: '/chat', shape: 'canonical' };
    const part = fc.oneof(
      fc.record({ type: fc.constant('text'), text: nastyText }),
      fc.record({ type: fc.constantFrom('file', 'image'), mediaType: nastyText, url: nastyText }),
      nastyJson,
    );
    const message = fc.oneof(
      nastyText,
      fc.record(
        {
          id: nastyText,
          role: fc.oneof(
            { arbitrary: fc.constant('user'), weight: 4 },
            fc.constantFrom('assistant', 'system'),
          ),
          parts: fc.array(part, { maxLength: 3 }),
          metadata: nastyJson,
        },
        { requiredKeys: ['role', 'parts'] },
      ),
      nastyJson,
    );
    const goodMessage = fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }),
      fc.record({ role: fc.constant('user'), parts: fc.constant([{ type: 'text', text: 'hi' }]) }),
    );
    const chatText = fc.oneof(
      {
        arbitrary: fc
          .record({ id: fc.constantFrom('thr_fuzz', 'thread-2'), message: fc.oneof(goodMessage, message) })
          .map((value) => JSON.stringify(value)),
        weight: 3,
      },
      {
        arbitrary: fc
          .record(
            {
              id: fc.oneof({ arbitrary: fc.constantFrom('thr_fuzz', 'thread-1'), weight: 3 }, nastyText),
              message,
              messages: fc.array(message, { maxLength: 3 }),
              trigger: fc.constantFrom('submit-message', 'regenerate-message', 'x'),
            },
            // Mostly one field or two, so many bodies are good enough to start a turn.
            { requiredKeys: [] },
          )
          .map((value) => JSON.stringify(value)),
        weight: 4,
      },
      { arbitrary: body, weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(
        chatText,
        fc.constantFrom<Record<string, string>>({ 'x-test-user': 'ada' }, { 'x-test-user': 'ada' }, {}),
        fc.constantFrom('application/json', 'application/json', 'application/json', 'text/plain'),
        async (text, user, contentType) => {
          const response = await fetch(`${url}/api/service/chat`, {
            method: 'POST',
            headers: { ...user, 'content-type': contentType },
            body: text,
            signal: AbortSignal.timeout(5000),
          });
          await expectShaped(route, response, true);
        },
      ),
      { numRuns: 150 },
    );
  });
});
