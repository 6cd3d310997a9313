/**
 * Every dashboard route against every kind of caller: a workspace's owner, member and viewer, a
 * signed-out browser, and the owner of another workspace. Viewers read only; billing, keys,
 * invitations and member changes are owners' only; another workspace's things are not found.
 * A route added to a route file without a row here fails the last test.
 *
 * @see docs/api/workspaces.md "Who may do what"
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { csrfTokenFor } from '../src/platform/cli/bootstrap.js';
import { DASHBOARD_PAGES } from '../src/platform/dashboard/pages/index.js';
import type { MembershipRole } from '../src/store/database.js';
import { publishTestRelease } from './support/deploy.js';
import { seedProviders } from './support/metered.js';
import {
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  startPlatform,
} from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

type Caller = 'owner' | 'member' | 'viewer' | 'signedOut' | 'otherOwner';
const ROLES: MembershipRole[] = ['owner', 'member', 'viewer'];
const ALL = ROLES;
const WRITERS: MembershipRole[] = ['owner', 'member'];
const OWNERS: MembershipRole[] = ['owner'];

/** What a route needs from the workspace it is called on, made fresh for each call. */
interface Fixture {
  tenantId: string;
  appId: string;
  /** The caller's session cookie (`name=value`), '' when signed out. */
  cookie: string;
}

interface Row {
  method: string;
  /** The route as its route file writes it. */
  route: string;
  /** Roles of the workspace that get a 2xx. */
  allowed: MembershipRole[];
  /** The call, with the ids it needs made fresh in the workspace. */
  call: (fx: Fixture) => Promise<Response>;
  /** Names something of the workspace: another workspace's owner gets 404. */
  byId?: boolean;
  /** The answer to a signed-out browser, when not 401. */
  signedOut?: number;
  /** The call changes the caller's current workspace: switch back after it. */
  switches?: boolean;
}

/** The platform's routes that are not the dashboard's (keys, JWTs, pages of their own, sign-in). */
const NOT_DASHBOARD = new Set([
  'GET /healthz',
  'GET /api/cli/balance',
  'GET /api/deployments/me/connections',
  // App Keys only (a host app's users' connections): test/wire/cloud-connections.test.ts.
  'GET /api/deployments/me/connectors',
  'GET /api/deployments/me/users/:user/connections',
  'POST /api/deployments/me/users/:user/connections',
  'GET /api/deployments/me/users/:user/connections/:id',
  'DELETE /api/deployments/me/users/:user/connections/:id',
  'GET /api/deployments/me/events',
  'GET /api/auth/me',
  'POST /api/auth/session',
  'DELETE /api/auth/session',
  'POST /api/auth/sign-out',
  'GET /api/cli/whoami',
  'POST /api/cli/logout',
  'POST /api/cli/ssh-sessions',
  'POST /api/cli/ssh-sessions/claim',
  'GET /invitations/accept',
  'POST /invitations/accept',
  // The welcome after accepting (a member's own workspace only): dashboard/form-answers.test.ts.
  'GET /invitations/accepted',
  'GET /dev/mailbox',
  // Platform admins' routes, not a workspace role's: admin.test.ts has their matrix.
  'GET /api/admin/tenants',
  'GET /api/admin/tenants/:id',
  'POST /api/admin/tenants/:id/grants',
  'POST /api/admin/tenants/:id/suspend',
  'POST /api/admin/tenants/:id/resume',
  'GET /api/admin/integrations/:slug/oauth',
  'PUT /api/admin/integrations/:slug/oauth',
  'DELETE /api/admin/integrations/:slug/oauth',
  // A browser's redirect to the provider and the provider's redirect back (an HTML page):
  // connector-oauth.test.ts walks them (owner, viewer, signed out, another user).
  'GET /api/oauth/:provider/start',
  'GET /api/oauth/:provider/callback',
  'PATCH /api/admin/integrations/:slug',
  // Always refused today (no live integration has a key of its own): integrations.test.ts checks its roles.
  'POST /api/integrations/:slug/regenerate',
  // Public, never reading a session: pricing.test.ts and catalog-assets.test.ts.
  'GET /pricing',
  'GET /api/pricing/models',
  'GET /api/pricing/integrations',
  'GET /api/pricing/public/:slug',
  'GET /static/integrations/:file',
  'GET /static/tools/:file',
  'GET /docs/integrations/:slug',
  'GET /api/admin/tools',
  'POST /api/admin/tools',
  'PATCH /api/admin/tools/:slug',
  'POST /api/admin/tools/:slug/releases',
  'POST /api/admin/tools/:slug/releases/:version/withdraw',
  // The public tool catalog: anyone, a session only widens it (admins) or fills `alreadyEnabled`;
  // tools.test.ts checks anonymous, signed-in, admin and another workspace's app.
  'GET /api/tools/catalog',
  'GET /api/tools/deployable',
  'GET /api/tools/:slug',
  'GET /api/tools/:slug/usage-framing',
  'GET /api/tools/:slug/integrations',
  // The billing pages' forms carry a session-bound CSRF token: payments.test.ts walks them.
  'POST /billing/purchase',
  'GET /billing/purchases/:id',
  'POST /billing/purchases/:id',
  // A page any member reads (the integration's connection status): links.test.ts opens it.
  'GET /integrations/:slug',
  // Stripe's routes, 404 unless Stripe is configured: stripe.test.ts checks their roles.
  'GET /api/billing/customer',
  'PATCH /api/billing/customer',
  'POST /api/billing/setup-intent',
  'POST /api/billing/portal',
  'POST /api/billing/reload',
  // Signed by Stripe, not a session.
  'POST /api/billing/webhook',
]);

let store: TestStore;
let server: RunningPlatform;
let ws: SignedInOwner;
let other: SignedInOwner;
const cookies = {} as Record<Caller, string>;
let users = 0;

const send = sessionClient(() => server.url);
/** As the workspace's owner, expecting success: makes the things the calls act on. */
const make = async (method: string, path: string, body?: unknown) => {
  const response = await send(cookies.owner, method, path, body);
  expect(response.status, `${method} ${path}`).toBeLessThan(300);
  return response.json();
};
const newConnection = async () =>
  (await make('POST', '/api/connections', { provider: 'search' })).connection.id as string;
/** A connector OAuth connection of the workspace (no provider revocation endpoint configured). */
const newOAuthConnection = async () =>
  (
    await store.db
      .insertInto('connections')
      .values({
        tenant_id: ws.tenantId,
        provider: 'matrix-connector',
        profile: 'user_oauth',
        status: 'connected',
        display_name: 'Matrix connector',
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
const newKey = async () =>
  (await make('POST', '/api/keys', { kind: 'app', appId: ws.appId })).key.id as string;
const signIn = async (email: string) => {
  const { token } = await server.platform.devIdp!.issueToken({ email });
  const signedIn = await fetch(`${server.url}/api/auth/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  return signedIn.headers.get('set-cookie')!.split(';')[0]!;
};
/** Another person in the workspace, to change or remove. */
const newTeammate = async () => {
  const email = `target-${++users}@example.test`;
  await signIn(email);
  const user = await store.db
    .selectFrom('users')
    .select('id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  await store.db
    .insertInto('memberships')
    .values({ tenant_id: ws.tenantId, user_id: user.id, role: 'viewer' })
    .execute();
  return user.id;
};
const CALLBACK = 'http://127.0.0.1:9/done';
/** An app of the workspace deployed in `beforeAll`, running a one-line server. */
let deployedAppId = '';
let deploys = 0;
/** A release that runs a one-line HTTP server: deploying it is quick. */
const TINY_SERVER =
  "require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT, '127.0.0.1')";
/** Another app of the workspace, to delete. */
const newApp = async () =>
  (
    await store.db
      .insertInto('apps')
      .values({ tenant_id: ws.tenantId, slug: `doomed-${++deploys}`, name: 'Doomed' })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;

const ROWS: Row[] = [
  {
    method: 'GET',
    route: '/api/user/me',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/user/me'),
  },
  {
    method: 'PATCH',
    route: '/api/user/me',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'PATCH', '/api/user/me', { name: 'Renamed' }),
  },
  {
    method: 'GET',
    route: '/api/tenants',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/tenants'),
  },
  {
    method: 'POST',
    route: '/api/tenants',
    allowed: ALL,
    switches: true,
    call: (fx) => send(fx.cookie, 'POST', '/api/tenants', { name: 'Another' }),
  },
  {
    method: 'POST',
    route: '/api/tenants/switch',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'POST', '/api/tenants/switch', { tenantId: fx.tenantId }),
  },
  {
    method: 'GET',
    route: '/api/tenants/me',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/tenants/me'),
  },
  {
    method: 'PATCH',
    route: '/api/tenants/me',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'PATCH', '/api/tenants/me', { name: 'Renamed' }),
  },
  {
    method: 'GET',
    route: '/api/tenants/me/members',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/tenants/me/members'),
  },
  {
    method: 'PATCH',
    route: '/api/tenants/me/members/:userId',
    allowed: OWNERS,
    byId: true,
    call: async (fx) =>
      send(fx.cookie, 'PATCH', `/api/tenants/me/members/${await newTeammate()}`, { role: 'member' }),
  },
  {
    method: 'DELETE',
    route: '/api/tenants/me/members/:userId',
    allowed: OWNERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'DELETE', `/api/tenants/me/members/${await newTeammate()}`),
  },
  {
    method: 'GET',
    route: '/api/tenants/me/invitations',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/tenants/me/invitations'),
  },
  {
    method: 'POST',
    route: '/api/tenants/me/invitations',
    allowed: OWNERS,
    call: (fx) =>
      send(fx.cookie, 'POST', '/api/tenants/me/invitations', {
        email: `invitee-${++users}@example.test`,
        role: 'member',
      }),
  },
  {
    method: 'DELETE',
    route: '/api/tenants/me/invitations/:id',
    allowed: OWNERS,
    byId: true,
    call: async (fx) => {
      const { invitation } = await make('POST', '/api/tenants/me/invitations', {
        email: `withdrawn-${++users}@example.test`,
        role: 'viewer',
      });
      return send(fx.cookie, 'DELETE', `/api/tenants/me/invitations/${invitation.id}`);
    },
  },
  {
    method: 'POST',
    route: '/api/billing/purchase',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/billing/purchase', { pack: 5 }),
  },
  {
    method: 'GET',
    route: '/api/billing/transactions',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/billing/transactions'),
  },
  {
    method: 'POST',
    route: '/api/billing/settle',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/billing/settle', {}),
  },
  {
    method: 'GET',
    route: '/billing',
    allowed: OWNERS,
    signedOut: 303,
    call: (fx) => send(fx.cookie, 'GET', '/billing'),
  },
  // The dashboard's pages: each one's own checks, and the API's behind its forms.
  ...(
    [
      ['/', ALL, '/'],
      ['/integrations', ALL, '/integrations'],
      ['/integrations/:slug', ALL, '/integrations/search'],
      ['/tools', ALL, '/tools'],
      ['/tools/:slug', ALL, '/tools/tiny'],
      ['/tools/:slug/deploy', WRITERS, '/tools/tiny/deploy'],
      ['/deployments', ALL, '/deployments'],
      ['/keys', OWNERS, '/keys'],
      ['/members', ALL, '/members'],
      ['/settings', ALL, '/settings'],
    ] as const
  ).map(([route, allowed, path]) => ({
    method: 'GET',
    route,
    allowed: [...allowed],
    signedOut: 303,
    call: (fx: Fixture) => send(fx.cookie, 'GET', path),
  })),
  {
    method: 'GET',
    route: '/deployments/:id',
    allowed: ALL,
    signedOut: 303,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/deployments/${fx.appId}`),
  },
  { method: 'GET', route: '/api/keys', allowed: OWNERS, call: (fx) => send(fx.cookie, 'GET', '/api/keys') },
  {
    method: 'POST',
    route: '/api/keys',
    allowed: OWNERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'POST', '/api/keys', { kind: 'app', appId: fx.appId }),
  },
  {
    method: 'PATCH',
    route: '/api/keys/:id',
    allowed: OWNERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'PATCH', `/api/keys/${await newKey()}`, { name: 'renamed' }),
  },
  {
    method: 'POST',
    route: '/api/keys/:id/rotate',
    allowed: OWNERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'POST', `/api/keys/${await newKey()}/rotate`, {}),
  },
  {
    method: 'DELETE',
    route: '/api/keys/:id',
    allowed: OWNERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'DELETE', `/api/keys/${await newKey()}`),
  },
  {
    method: 'GET',
    route: '/api/connections',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/connections'),
  },
  {
    method: 'POST',
    route: '/api/connections',
    allowed: WRITERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/connections', { provider: 'search' }),
  },
  {
    method: 'GET',
    route: '/api/connections/:id',
    allowed: ALL,
    byId: true,
    call: async (fx) => send(fx.cookie, 'GET', `/api/connections/${await newConnection()}`),
  },
  {
    method: 'PATCH',
    route: '/api/connections/:id',
    allowed: WRITERS,
    byId: true,
    call: async (fx) =>
      send(fx.cookie, 'PATCH', `/api/connections/${await newConnection()}`, { display_name: 'Renamed' }),
  },
  {
    method: 'DELETE',
    route: '/api/connections/:id',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'DELETE', `/api/connections/${await newConnection()}`),
  },
  {
    method: 'POST',
    route: '/api/oauth/:provider/start',
    allowed: WRITERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/oauth/matrix-connector/start', { appId: fx.appId }),
    byId: true,
  },
  {
    method: 'DELETE',
    route: '/api/oauth/:provider/connections/:id',
    allowed: WRITERS,
    byId: true,
    call: async (fx) =>
      send(fx.cookie, 'DELETE', `/api/oauth/matrix-connector/connections/${await newOAuthConnection()}`),
  },
  {
    method: 'GET',
    route: '/api/connections/:id/keys',
    allowed: ALL,
    byId: true,
    call: async (fx) => send(fx.cookie, 'GET', `/api/connections/${await newConnection()}/keys`),
  },
  {
    method: 'POST',
    route: '/api/connections/:id/keys',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'POST', `/api/connections/${await newConnection()}/keys`, {}),
  },
  {
    method: 'DELETE',
    route: '/api/connections/:id/keys/:keyId',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => {
      const connectionId = await newConnection();
      const { id } = await make('POST', `/api/connections/${connectionId}/keys`, {});
      return send(fx.cookie, 'DELETE', `/api/connections/${connectionId}/keys/${id}`);
    },
  },
  {
    method: 'POST',
    route: '/api/deploy',
    allowed: WRITERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/deploy', { toolSlug: 'tiny', slug: `tiny-${++deploys}` }),
  },
  {
    method: 'POST',
    route: '/api/apps/:id/redeploy',
    allowed: WRITERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'POST', `/api/apps/${deployedAppId}/redeploy`, {}),
  },
  {
    method: 'POST',
    route: '/api/apps/:id/stop',
    allowed: WRITERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'POST', `/api/apps/${deployedAppId}/stop`),
  },
  {
    method: 'GET',
    route: '/api/apps',
    allowed: ALL,
    call: (fx) => send(fx.cookie, 'GET', '/api/apps'),
  },
  {
    method: 'GET',
    route: '/api/apps/:id',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${fx.appId}`),
  },
  {
    method: 'PATCH',
    route: '/api/apps/:id',
    allowed: WRITERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'PATCH', `/api/apps/${fx.appId}`, { name: 'Renamed app' }),
  },
  {
    method: 'DELETE',
    route: '/api/apps/:id',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => send(fx.cookie, 'DELETE', `/api/apps/${await newApp()}`),
  },
  {
    method: 'GET',
    route: '/api/apps/:id/connections',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${fx.appId}/connections`),
  },
  {
    method: 'GET',
    route: '/api/apps/:id/deployment',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${deployedAppId}/deployment`),
  },
  {
    method: 'GET',
    route: '/api/apps/:id/logs',
    allowed: WRITERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${deployedAppId}/logs?tail=10`),
  },
  {
    method: 'GET',
    route: '/api/apps/:id/callback-origins',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${fx.appId}/callback-origins`),
  },
  {
    method: 'PUT',
    route: '/api/apps/:id/callback-origins',
    allowed: WRITERS,
    byId: true,
    call: (fx) =>
      send(fx.cookie, 'PUT', `/api/apps/${fx.appId}/callback-origins`, {
        callbackOrigins: ['https://host.test'],
      }),
  },
  {
    method: 'GET',
    route: '/api/apps/:id/secrets',
    allowed: ALL,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/apps/${fx.appId}/secrets`),
  },
  {
    method: 'PUT',
    route: '/api/apps/:id/secrets/:name',
    allowed: WRITERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'PUT', `/api/apps/${fx.appId}/secrets/MATRIX`, { value: 'v' }),
  },
  {
    method: 'DELETE',
    route: '/api/apps/:id/secrets/:name',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => {
      await server.platform.context.deployments.setSecret(ws.tenantId, ws.appId, 'GONE', 'v');
      return send(fx.cookie, 'DELETE', `/api/apps/${fx.appId}/secrets/GONE`);
    },
  },
  {
    method: 'POST',
    route: '/api/apps/:appId/connections',
    allowed: WRITERS,
    byId: true,
    call: async (fx) =>
      send(fx.cookie, 'POST', `/api/apps/${fx.appId}/connections`, { connection_id: await newConnection() }),
  },
  {
    method: 'DELETE',
    route: '/api/apps/:appId/connections/:connectionId',
    allowed: WRITERS,
    byId: true,
    call: async (fx) => {
      const connectionId = await newConnection();
      await make('POST', `/api/apps/${ws.appId}/connections`, { connection_id: connectionId });
      return send(fx.cookie, 'DELETE', `/api/apps/${fx.appId}/connections/${connectionId}`);
    },
  },
  {
    method: 'GET',
    route: '/api/billing/spend-caps',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/billing/spend-caps'),
  },
  {
    method: 'PUT',
    route: '/api/billing/spend-caps',
    allowed: OWNERS,
    byId: true,
    call: (fx) =>
      send(fx.cookie, 'PUT', '/api/billing/spend-caps', {
        app_id: fx.appId,
        daily_micros: 5_000_000,
        monthly_micros: null,
      }),
  },
  {
    method: 'GET',
    route: '/api/billing/burn-rate',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/billing/burn-rate'),
  },
  {
    method: 'GET',
    route: '/api/billing/usage',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/billing/usage'),
  },
  {
    method: 'GET',
    route: '/api/deployments/:id/usage',
    allowed: OWNERS,
    byId: true,
    call: (fx) => send(fx.cookie, 'GET', `/api/deployments/${fx.appId}/usage`),
  },
  {
    method: 'GET',
    route: '/api/integrations/:slug/usage',
    allowed: OWNERS,
    call: (fx) => send(fx.cookie, 'GET', '/api/integrations/llm/usage'),
  },
  {
    method: 'GET',
    route: '/api/integrations',
    allowed: ALL,
    signedOut: 200,
    call: (fx) => send(fx.cookie, 'GET', '/api/integrations'),
  },
  {
    method: 'GET',
    route: '/api/integrations/:slug',
    allowed: ALL,
    signedOut: 200,
    call: (fx) => send(fx.cookie, 'GET', '/api/integrations/search'),
  },
  {
    method: 'POST',
    route: '/api/integrations/:slug',
    allowed: WRITERS,
    call: (fx) => send(fx.cookie, 'POST', '/api/integrations/search', { enabled: true }),
  },
  {
    method: 'GET',
    route: '/dev/cli-bootstrap',
    allowed: WRITERS,
    signedOut: 303,
    call: (fx) =>
      send(
        fx.cookie,
        'GET',
        `/dev/cli-bootstrap?${new URLSearchParams({ cb: CALLBACK, mode: 'personal-key' })}`,
      ),
  },
  {
    method: 'POST',
    route: '/dev/cli-bootstrap',
    allowed: WRITERS,
    call: (fx) =>
      fetch(`${server.url}/dev/cli-bootstrap`, {
        method: 'POST',
        headers: {
          cookie: fx.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: server.url,
        },
        body: new URLSearchParams({
          cb: CALLBACK,
          mode: 'personal-key',
          csrf_token: fx.cookie ? csrfTokenFor(fx.cookie.split('=')[1]!) : '',
        }),
      }),
  },
];

beforeAll(async () => {
  store = await openTestStore();
  server = await startPlatform(store, {
    rateLimits: {
      failedCredentials: { limit: 100_000, windowMs: 60_000 },
      deploy: { limit: 100_000, windowMs: 60_000 },
    },
  });
  await publishTestRelease(server.platform, {
    slug: 'tiny',
    artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', TINY_SERVER] },
  });
  await seedProviders(server.platform, 'http://127.0.0.1:9');
  await store.db
    .insertInto('integrations')
    .values({ provider: 'matrix-connector', name: 'Matrix connector', kind: 'connector' })
    .execute();
  await server.platform.context.oauthClients.put(
    'matrix-connector',
    {
      authorizeUrl: 'https://provider.example/authorize',
      tokenUrl: 'https://provider.example/token',
      clientId: 'c',
    },
    null,
  );
  ws = await signedInOwner(server, 'matrix-owner@example.test');
  other = await signedInOwner(server, 'matrix-other@example.test');
  for (const tenantId of [ws.tenantId, other.tenantId]) {
    await post(store.db, {
      tenantId,
      amountMicros: 1_000_000,
      kind: 'grant',
      idempotencyKey: `matrix-${tenantId}`,
    });
  }
  const deployed = await send(ws.cookie, 'POST', '/api/deploy', { toolSlug: 'tiny', slug: 'matrix-app' });
  expect(deployed.status).toBe(201);
  deployedAppId = (await deployed.json()).app.id;
  cookies.owner = ws.cookie;
  cookies.otherOwner = other.cookie;
  cookies.signedOut = '';
  for (const role of ['member', 'viewer'] as const) {
    const email = `matrix-${role}@example.test`;
    cookies[role] = await signIn(email);
    const user = await store.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    await store.db
      .insertInto('memberships')
      .values({ tenant_id: ws.tenantId, user_id: user.id, role })
      .execute();
    expect((await send(cookies[role], 'POST', '/api/tenants/switch', { tenantId: ws.tenantId })).status).toBe(
      200,
    );
  }
});
afterAll(async () => {
  await server?.close();
  await store?.dispose();
});

describe('role matrix', () => {
  for (const row of ROWS) {
    it(`${row.method} ${row.route}`, async () => {
      const fixture = (caller: Caller): Fixture => ({
        tenantId: ws.tenantId,
        appId: ws.appId,
        cookie: cookies[caller],
      });
      for (const role of ROLES) {
        const response = await row.call(fixture(role));
        const allowed = row.allowed.includes(role);
        expect(response.status, `${role}: ${await response.clone().text()}`).toBe(
          allowed ? (response.status === 201 ? 201 : 200) : 403,
        );
        if (!allowed && response.headers.get('content-type')?.includes('json')) {
          expect((await response.json()).message).toMatch(/^Forbidden/);
        }
        if (row.switches) await send(cookies[role], 'POST', '/api/tenants/switch', { tenantId: ws.tenantId });
      }

      const signedOut = await row.call(fixture('signedOut'));
      expect(signedOut.status, 'signed out').toBe(row.signedOut ?? 401);

      // Another workspace's owner: what names this workspace is not found; the rest is their own.
      const stranger = await row.call(fixture('otherOwner'));
      const text = await stranger.text();
      if (row.byId) {
        expect(stranger.status, `another workspace's owner: ${text}`).toBe(404);
      } else {
        expect(stranger.status, `another workspace's owner: ${text}`).toBeLessThan(300);
        expect(text).not.toContain(ws.tenantId);
        expect(text).not.toContain(ws.appId);
      }
      if (row.switches)
        await send(cookies.otherOwner, 'POST', '/api/tenants/switch', { tenantId: other.tenantId });
    });
  }

  it('has a row for every dashboard route in the route files', () => {
    const root = join(import.meta.dirname, '../src/platform');
    const files = [
      ...readdirSync(join(root, 'routes')).map((file) => join(root, 'routes', file)),
      ...readdirSync(join(root, 'cli')).map((file) => join(root, 'cli', file)),
    ].filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
    const declared = new Set<string>();
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(
        /app\.(get|post|put|patch|delete)\(\s*'([^']+)'/g,
      )) {
        declared.add(`${match[1]!.toUpperCase()} ${match[2]}`);
      }
    }
    // The dashboard's pages: each answers GET; their forms act through the API routes above.
    for (const page of DASHBOARD_PAGES) declared.add(`GET ${page.path}`);
    const covered = new Set(ROWS.map((row) => `${row.method} ${row.route}`));
    const missing = [...declared].filter((route) => !covered.has(route) && !NOT_DASHBOARD.has(route));
    expect(missing).toEqual([]);
    expect([...covered].filter((route) => !declared.has(route))).toEqual([]);
  });
});
