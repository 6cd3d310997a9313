/**
 * Starting an ssh session (`POST /api/cli/ssh-sessions`) and the broker's one-time claim
 * (`POST /api/cli/ssh-sessions/claim`) over real HTTP. The shell itself, through a broker, is in
 * packages/dev-cli/test/ssh.test.ts.
 *
 * @see docs/cli.md "ssh"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';

const BROKER_URL = 'ws://127.0.0.1:9/ssh';
const BROKER_SECRET = 'broker-secret-0123456789abcdef0123456789';

let store: TestStore;
let running: RunningPlatform;
let tenant: TenantFixture;
let stranger: TenantFixture;

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store, {
    env: { SERVICE_SSH_BROKER_URL: BROKER_URL, SERVICE_SSH_BROKER_SECRET: BROKER_SECRET },
  });
  tenant = await createTenantFixture(running.platform);
  stranger = await createTenantFixture(running.platform);
});
afterAll(async () => {
  await running?.close();
  await store?.dispose();
});

const start = (key: string | undefined, body: unknown, base = running.url) =>
  fetch(`${base}/api/cli/ssh-sessions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const claim = (token: unknown, secret = BROKER_SECRET) =>
  fetch(`${running.url}/api/cli/ssh-sessions/claim`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ token }),
  });

async function startedToken(deployment = 'test-app'): Promise<string> {
  const response = await start(tenant.cliKey, { deployment });
  expect(response.status).toBe(201);
  return ((await response.json()) as { token: string }).token;
}

describe('POST /api/cli/ssh-sessions', () => {
  it('answers 201 with the broker URL and a one-time token, by slug or by id', async () => {
    for (const deployment of ['test-app', tenant.appId]) {
      const response = await start(tenant.cliKey, { deployment });
      expect(response.status).toBe(201);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = await response.json();
      expect(body).toEqual({
        session_id: expect.any(String),
        broker_url: BROKER_URL,
        token: expect.stringMatching(/^service_ssh_[\w-]{43}$/),
        expires_at: expect.stringMatching(/Z$/),
        deployment: { id: tenant.appId, slug: 'test-app' },
      });
      // No secret in the URL the CLI connects to.
      expect(body.broker_url).not.toContain(body.token);
      const ttl = Date.parse(body.expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(50_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });

  it("reads another tenant's deployment as not found", async () => {
    for (const deployment of [stranger.appId, 'missing-app']) {
      const response = await start(tenant.cliKey, { deployment });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({
        message: 'Deployment not found',
        code: 'DEPLOYMENT_NOT_FOUND',
      });
    }
  });

  it('accepts only CLI keys', async () => {
    for (const key of [tenant.appKey, tenant.connectionKey]) {
      const response = await start(key, { deployment: 'test-app' });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({
        message: 'Only CLI keys can open a shell',
        code: 'NOT_A_CLI_KEY',
      });
    }
    expect((await start(undefined, { deployment: 'test-app' })).status).toBe(401);
    expect((await start(`service_sk_${'B'.repeat(43)}`, { deployment: 'test-app' })).status).toBe(401);
  });

  it('answers 400 for malformed JSON, a missing or wrong-typed deployment, and 413 for a huge body', async () => {
    const notJson = 'Request body must be JSON: { "deployment": "<slug or id>" }';
    // Not an object: the expected shape. A JSON object with a wrong member: that member, and why.
    for (const [body, message] of [
      ['{not json', notJson],
      ['[]', notJson],
      [{}, 'deployment: is required (an app slug or id)'],
      [{ deployment: 42 }, 'deployment: must be a string (an app slug or id)'],
      [{ deployment: '  ' }, 'deployment: must not be blank'],
      [{ deployment: 'x'.repeat(201) }, 'deployment: must be at most 200 characters'],
    ] as const) {
      const response = await start(tenant.cliKey, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toEqual({ message, code: 'VALIDATION_FAILED' });
    }
    expect((await start(tenant.cliKey, { deployment: 'x'.repeat(20_000) })).status).toBe(413);
  });

  it('answers 503 when the platform has no broker', async () => {
    const other = await openTestStore();
    const bare = await startPlatform(other);
    try {
      const own = await createTenantFixture(bare.platform);
      const response = await start(own.cliKey, { deployment: 'test-app' }, bare.url);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        message: 'No ssh broker is configured on this platform',
        code: 'SSH_UNAVAILABLE',
      });
      const claimed = await fetch(`${bare.url}/api/cli/ssh-sessions/claim`, { method: 'POST' });
      expect(claimed.status).toBe(404);
    } finally {
      await bare.close();
      await other.dispose();
    }
  });
});

describe('housekeeping', () => {
  it('sweeps sessions a day past their expiry when sessions are started', async () => {
    const other = await openTestStore();
    const fresh = await startPlatform(other, {
      env: { SERVICE_SSH_BROKER_URL: BROKER_URL, SERVICE_SSH_BROKER_SECRET: BROKER_SECRET },
    });
    try {
      const own = await createTenantFixture(fresh.platform);
      const old = (hoursAgo: number, hash: string) => ({
        tenant_id: own.tenantId,
        app_id: own.appId,
        token_hash: hash,
        expires_at: new Date(Date.now() - hoursAgo * 3_600_000),
      });
      await other.db
        .insertInto('ssh_sessions')
        .values([old(25, 'stale'), old(2, 'recent')])
        .execute();
      expect((await start(own.cliKey, { deployment: 'test-app' }, fresh.url)).status).toBe(201);
      await expect
        .poll(async () => (await other.db.selectFrom('ssh_sessions').select('token_hash').execute()).length)
        .toBe(2);
      const hashes = (await other.db.selectFrom('ssh_sessions').select('token_hash').execute()).map(
        (r) => r.token_hash,
      );
      expect(hashes).toContain('recent');
      expect(hashes).not.toContain('stale');
    } finally {
      await fresh.close();
      await other.dispose();
    }
  });
});

describe('POST /api/cli/ssh-sessions/claim', () => {
  it('tells the broker which deployment and user a token is for, exactly once', async () => {
    const token = await startedToken();
    const first = await claim(token);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({
      session_id: expect.any(String),
      tenant_id: tenant.tenantId,
      deployment: { id: tenant.appId, slug: 'test-app' },
      user: { id: tenant.userId, email: `${tenant.subject}@example.test` },
    });
    const again = await claim(token);
    expect(again.status).toBe(401);
    expect(await again.json()).toEqual({
      message: 'Invalid, expired or already used session token',
      code: 'INVALID_SESSION_TOKEN',
    });
  });

  it('gives one success when several claims of one token race', async () => {
    const token = await startedToken();
    const statuses = await Promise.all([1, 2, 3, 4].map(async () => (await claim(token)).status));
    expect(statuses.sort()).toEqual([200, 401, 401, 401]);
  });

  it('refuses an expired token', async () => {
    const token = await startedToken();
    await store.db
      .updateTable('ssh_sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('claimed_at', 'is', null)
      .execute();
    expect((await claim(token)).status).toBe(401);
  });

  it('refuses a token whose CLI key was revoked after it was issued', async () => {
    const key = await running.platform.context.keys.issue({
      tenantId: tenant.tenantId,
      kind: 'cli',
      userId: tenant.userId,
    });
    const started = await start(key.key, { deployment: 'test-app' });
    expect(started.status).toBe(201);
    const { token } = (await started.json()) as { token: string };
    const logout = await fetch(`${running.url}/api/cli/logout`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}` },
    });
    expect(logout.status).toBe(200);
    const refused = await claim(token);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'INVALID_SESSION_TOKEN' });
  });

  it('refuses a wrong broker secret without consuming the token', async () => {
    const token = await startedToken();
    for (const secret of ['wrong', `${BROKER_SECRET}x`, '']) {
      const response = await claim(token, secret);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'INVALID_BROKER_SECRET' });
    }
    expect((await claim(token)).status).toBe(200);
  });

  it('answers 400 when the body has no token, and 401 for a made-up one', async () => {
    const noToken = await fetch(`${running.url}/api/cli/ssh-sessions/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BROKER_SECRET}` },
      body: 'nope',
    });
    expect(noToken.status).toBe(400);
    expect((await claim(`service_ssh_${'C'.repeat(43)}`)).status).toBe(401);
    const wrongType = await claim(42);
    expect(wrongType.status).toBe(400);
    expect(await wrongType.json()).toEqual({
      message: 'token: must be a string (the session token)',
      code: 'VALIDATION_FAILED',
    });
  });
});
