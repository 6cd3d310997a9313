/**
 * Deploying a catalog tool over HTTP, as a signed-in workspace: `POST /api/deploy` runs
 * `examples/deployed-tool` through the local deployer (a real child process), the apps API reads,
 * redeploys, stops and deletes it, and the app proxy reaches it with the signed-in user's identity
 * (SSE and WebSocket included). The refusals: billing gate, inputs, integrations, slugs,
 * idempotency, roles, rate limit, a deployer failure leaving nothing behind.
 */

import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { LocalDeployer } from '../src/deploy/local-deployer.js';
import { silentLogger } from '../src/http/logger.js';
import { createPlatform } from '../src/platform/create-platform.js';
import { ensureSdkBuilt, publishTestRelease } from './support/deploy.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { seedProviders } from './support/metered.js';
import {
  devSignIn,
  type RunningPlatform,
  sessionClient,
  signedInTeammate,
  startPlatformAtOwnUrl,
  TEST_ENCRYPTION_KEY,
} from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

let store: TestStore;
let server: RunningPlatform;
let upstream: FakeUpstream;
let emails = 0;

const WIZARD = [
  { key: 'GREETING', label: 'Greeting', type: 'string', required: true },
  { key: 'LIMIT', label: 'Limit', type: 'number', required: false },
  { key: 'TOKEN', label: 'Token', type: 'secret', required: false },
];

beforeAll(async () => {
  ensureSdkBuilt();
  store = await openTestStore();
  upstream = await startFakeUpstream();
  server = await startPlatformAtOwnUrl(store, {
    rateLimits: { deploy: { limit: 10_000, windowMs: 60_000 } },
  });
  await seedProviders(server.platform, upstream.url);
  await publishTestRelease(server.platform, {
    slug: 'echo-tool',
    wizardInputs: WIZARD,
    required: ['search'],
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await upstream?.close();
  await store?.dispose();
});

const api = sessionClient(() => server.url);

/** Publishes a tool whose process runs `script` with `node -e`, and deploys it as `slug`. */
async function deployScript(
  cookie: string,
  toolSlug: string,
  slug: string,
  script: string,
): Promise<Response> {
  await publishTestRelease(server.platform, {
    slug: toolSlug,
    artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', script] },
  });
  return api(cookie, 'POST', '/api/deploy', { toolSlug, slug });
}

interface Workspace {
  cookie: string;
  tenantId: string;
  email: string;
}

/** A signed-in owner of a new workspace with credit and a search connection. */
async function fundedWorkspace(creditMicros = 5_000_000): Promise<Workspace> {
  const email = `deployer-${++emails}@example.test`;
  const cookie = await devSignIn(server, email);
  const user = await store.db
    .selectFrom('users')
    .select('default_tenant_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const tenantId = user.default_tenant_id!;
  if (creditMicros > 0) {
    await post(store.db, {
      tenantId,
      amountMicros: creditMicros,
      kind: 'grant',
      idempotencyKey: `grant-${tenantId}`,
    });
  }
  expect((await api(cookie, 'POST', '/api/connections', { provider: 'search' })).status).toBe(201);
  return { cookie, tenantId, email };
}

const deployBody = (slug: string, extra: Record<string, unknown> = {}) => ({
  toolSlug: 'echo-tool',
  slug,
  inputs: { GREETING: 'hello', LIMIT: 3, TOKEN: 'tok-secret' },
  ...extra,
});

async function deploy(ws: Workspace, slug: string) {
  const response = await api(ws.cookie, 'POST', '/api/deploy', deployBody(slug));
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as {
    app: { id: string; slug: string; openUrl: string; usageUrl: string; deployment: { state: string } };
    appKey: { id: string; key: string };
  };
}

describe('deploying the example tool', () => {
  let ws: Workspace;
  let deployed: Awaited<ReturnType<typeof deploy>>;

  beforeAll(async () => {
    ws = await fundedWorkspace();
    deployed = await deploy(ws, 'echo');
  }, 60_000);

  it('answers the app, running, with its App Key shown once and its links', async () => {
    expect(deployed.appKey.key).toMatch(/^service_sk_/);
    expect(deployed.app).toMatchObject({
      slug: 'echo',
      toolSlug: 'echo-tool',
      version: '1.0.0',
      deployment: { state: 'running', desiredState: 'running', restarts: 0 },
      usageUrl: `${server.url}/api/deployments/${deployed.app.id}/usage`,
      openUrl: `${server.url}/apps/echo/`,
    });
    // The key works for its tenant, and the usage link answers its owner.
    const balance = await fetch(`${server.url}/api/billing/balance`, {
      headers: { authorization: `Bearer ${deployed.appKey.key}` },
    });
    expect(balance.status).toBe(200);
    expect((await api(ws.cookie, 'GET', new URL(deployed.app.usageUrl).pathname)).status).toBe(200);
    // Bound to the workspace's search connection; the secret input is a secret, by name only.
    const bound = await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/connections`)).json();
    expect(bound.connections.map((c: { provider: string }) => c.provider)).toEqual(['search']);
    const secrets = await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/secrets`)).json();
    expect(secrets).toEqual({ secrets: [{ name: 'TOKEN' }] });
    const sealed = await store.db.selectFrom('app_secrets').select('value_sealed').executeTakeFirstOrThrow();
    expect(sealed.value_sealed).not.toContain('tok-secret');
    const row = await store.db
      .selectFrom('deployments')
      .selectAll()
      .where('app_id', '=', deployed.app.id)
      .executeTakeFirstOrThrow();
    expect(row.app_key_sealed).not.toContain(deployed.appKey.key);
    expect(row.inputs).toEqual({ GREETING: 'hello', LIMIT: '3' });
  });

  it('lists it, reads its status and logs, renames it', async () => {
    const list = await (await api(ws.cookie, 'GET', '/api/apps')).json();
    expect(list.apps.map((a: { slug: string }) => a.slug)).toEqual(['echo']);
    const status = await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/deployment`)).json();
    expect(status.deployment.state).toBe('running');
    const logs = await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/logs?tail=5`)).json();
    expect(logs.lines.some((l: { line: string }) => l.line.startsWith('Deployed tool on'))).toBe(true);
    expect(logs.lines.length).toBeLessThanOrEqual(5);
    const badTail = await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/logs?tail=0`);
    expect(badTail.status).toBe(400);
    for (const tail of ['0x10', '1e3', '1.5', '', '%2010']) {
      const refused = await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/logs?tail=${tail}`);
      expect(refused.status, tail).toBe(400);
      expect((await refused.json()).message).toBe('tail must be a whole number from 1 to 1000');
    }
    const missing = await api(ws.cookie, 'GET', '/api/apps/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
    // Refusals are never kept by a cache either.
    for (const refused of [badTail, missing]) expect(refused.headers.get('cache-control')).toBe('no-store');
    const bell = await api(ws.cookie, 'PATCH', `/api/apps/${deployed.app.id}`, { name: 'ok\u0007bell' });
    expect(bell.status).toBe(400);
    expect((await bell.json()).message).toMatch(/name: must not contain control characters/);
    const renamed = await api(ws.cookie, 'PATCH', `/api/apps/${deployed.app.id}`, { name: 'Echo!' });
    expect((await renamed.json()).app.name).toBe('Echo!');
  });

  it('proxies as the signed-in user: identity headers injected, client-sent ones never reach the app', async () => {
    const member = await signedInTeammate(server, ws.tenantId, 'member', `member-${++emails}@example.test`);
    const response = await api(member, 'GET', '/apps/echo/whoami', undefined, {
      'x-service-role': 'owner',
      'x-service-user-id': 'someone-else',
      'X-Service-Tenant-Id': 'another-tenant',
      'x-service-extra': 'forged',
    });
    expect(response.status).toBe(200);
    const seen = await response.json();
    const user = await store.db
      .selectFrom('users')
      .select(['idp_subject', 'email'])
      .where('email', '=', `member-${emails}@example.test`)
      .executeTakeFirstOrThrow();
    expect(seen).toEqual({
      'x-service-user-id': user.idp_subject,
      'x-service-user-email': user.email,
      'x-service-user-name': '',
      'x-service-tenant-id': ws.tenantId,
      'x-service-role': 'member',
    });
  });

  it("forwards the method, query and body, and answers with the app's status and body", async () => {
    const body = randomBytes(512 * 1024);
    const echoed = await fetch(`${server.url}/apps/echo/echo?x=1`, {
      method: 'POST',
      headers: { cookie: ws.cookie, 'content-type': 'application/octet-stream' },
      body,
    });
    expect(echoed.status).toBe(200);
    expect(Buffer.from(await echoed.arrayBuffer()).equals(body)).toBe(true);
    expect((await api(ws.cookie, 'GET', '/apps/echo/nothing-here')).status).toBe(404);
  });

  it('forwards an upload sent with Expect: 100-continue (as curl sends a large one)', async () => {
    const body = randomBytes(64 * 1024);
    const answer = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const req = httpRequest(`${server.url}/apps/echo/echo`, {
        method: 'POST',
        headers: {
          cookie: ws.cookie,
          'content-type': 'application/octet-stream',
          'content-length': String(body.length),
          expect: '100-continue',
        },
      });
      req.on('continue', () => req.end(body));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
    });
    expect(answer.status).toBe(200);
    expect(answer.body.equals(body)).toBe(true);
  });

  it('passes an answer the app compressed anyway, readable', async () => {
    const gzipping =
      "const zlib = require('node:zlib'); require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }); s.end(zlib.gzipSync('compressed hello')); }).listen(process.env.PORT, '127.0.0.1')";
    expect((await deployScript(ws.cookie, 'gzip-tool', 'gzipped', gzipping)).status).toBe(201);
    const answer = await api(ws.cookie, 'GET', '/apps/gzipped/');
    expect(await answer.text()).toBe('compressed hello');
  });

  it('never forwards a client-sent Forwarded header (the platform says where the request came in)', async () => {
    const echoing =
      "require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'application/json' }); s.end(JSON.stringify(q.headers)); }).listen(process.env.PORT, '127.0.0.1')";
    expect((await deployScript(ws.cookie, 'headers-tool', 'headers', echoing)).status).toBe(201);
    const seen = await (
      await api(ws.cookie, 'GET', '/apps/headers/', undefined, {
        forwarded: 'for=203.0.113.9;host=evil.example;proto=https',
      })
    ).json();
    expect(seen.forwarded).toBeUndefined();
    expect(seen['x-forwarded-host']).toBe(new URL(server.url).host);
  });

  it('streams server-sent events through the proxy as they are written', async () => {
    const response = await api(ws.cookie, 'GET', '/apps/echo/ticks');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('data: 0');
    const firstAt = Date.now();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toContain('data: 3');
    // The tool writes the other three 200 ms apart: passed on as written, they come most of
    // 600 ms after the first; a proxy that buffered the stream would hand them over with it.
    // (Measured between arrivals, so a slow machine stretches it, never shortens it.)
    expect(Date.now() - firstAt).toBeGreaterThan(300);
  });

  it('lets a client leave an event stream midway without an error written to the console', async () => {
    const printed = vi.spyOn(console, 'error');
    try {
      const leaving = new AbortController();
      const response = await fetch(`${server.url}/apps/echo/ticks`, {
        headers: { cookie: ws.cookie },
        signal: leaving.signal,
      });
      await response.body!.getReader().read();
      leaving.abort();
      // The tool writes on for 600 ms; the proxy's reading of it is called off with the client.
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
    }
  });

  it('opens a WebSocket through the proxy with the identity headers, and refuses other origins', async () => {
    const open = (origin: string, path = '/apps/echo/ws') =>
      new Promise<{ status: number; message: string | null }>((resolve, reject) => {
        const req = httpRequest(`${server.url}${path}`, {
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': randomBytes(16).toString('base64'),
            origin,
            cookie: ws.cookie,
            'x-service-role': 'viewer',
          },
        });
        req.on('upgrade', (_res, socket, head) => {
          const chunks: Buffer[] = [head];
          socket.on('data', (chunk: Buffer) => chunks.push(chunk));
          socket.on('end', () => {
            const frame = Buffer.concat(chunks);
            const length = frame.readUInt16BE(2);
            resolve({ status: 101, message: frame.subarray(4, 4 + length).toString('utf8') });
          });
        });
        req.on('response', (res) => resolve({ status: res.statusCode ?? 0, message: null }));
        req.on('error', reject);
        req.end();
      });
    const opened = await open(server.url);
    expect(opened.status).toBe(101);
    expect(JSON.parse(opened.message!)).toMatchObject({
      'x-service-role': 'owner',
      'x-service-tenant-id': ws.tenantId,
    });
    expect((await open('http://evil.example')).status).toBe(403);
    // The slug read decoded, as the HTTP proxy reads it; one that is no percent-encoding is no app.
    const encoded = await open(server.url, '/apps/%65cho/ws');
    expect(encoded.status).toBe(101);
    expect(JSON.parse(encoded.message!)).toMatchObject({ 'x-service-tenant-id': ws.tenantId });
    expect((await open(server.url, '/apps/%e0cho/ws')).status).toBe(404);
  });

  it('reaches the app at a percent-encoded slug with the path as it came', async () => {
    const response = await api(ws.cookie, 'GET', '/apps/%65cho/whoami');
    expect(response.status).toBe(200);
    expect((await response.json())['x-service-tenant-id']).toBe(ws.tenantId);
  });

  it('refuses a WebSocket with a malformed session cookie as signed out (401), not a 500', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server.url}/apps/echo/ws`, {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
          origin: server.url,
          cookie: 'service_session=%E0%A4%A',
        },
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolve(101);
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(401);
  });

  it('proxies for a user whose email is beyond Latin-1 (an identity provider may send one), percent-encoded', async () => {
    const email = `用户-${++emails}@example.test`;
    const member = await signedInTeammate(server, ws.tenantId, 'member', `latin-${emails}@example.test`);
    // An outside identity provider's sign-in writes its email claim as it came.
    await store.db
      .updateTable('users')
      .set({ email })
      .where('email', '=', `latin-${emails}@example.test`)
      .execute();
    const response = await api(member, 'GET', '/apps/echo/whoami');
    expect(response.status).toBe(200);
    expect((await response.json())['x-service-user-email']).toBe(encodeURIComponent(email));
  });

  it('refuses an upgrade whose request target is no URL with 400, not a 500', async () => {
    const { port } = new URL(server.url);
    const statusLine = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `GET http://[bad/apps/echo/ws HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\nupgrade: websocket\r\norigin: ${server.url}\r\ncookie: ${ws.cookie}\r\n\r\n`,
        );
      });
      socket.once('data', (chunk: Buffer) => {
        resolve(chunk.toString('latin1').split('\r\n')[0]!);
        socket.destroy();
      });
      socket.once('error', reject);
    });
    expect(statusLine).toBe('HTTP/1.1 400 Bad Request');
  });

  it('survives a client that resets its WebSocket upgrade while it is being checked (and refused)', async () => {
    const uncaught: unknown[] = [];
    const record = (error: unknown) => uncaught.push(error);
    process.prependListener('uncaughtException', record);
    try {
      const { port } = new URL(server.url);
      for (let attempt = 0; attempt < 10; attempt++) {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), '127.0.0.1', () => {
            socket.write(
              `GET /apps/no-such-app/ws HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\nupgrade: websocket\r\norigin: ${server.url}\r\ncookie: ${ws.cookie}\r\n\r\n`,
            );
            setTimeout(() => {
              socket.resetAndDestroy();
              resolve();
            }, attempt % 5);
          });
          socket.on('error', () => {});
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      process.off('uncaughtException', record);
    }
    expect(uncaught).toEqual([]);
    expect((await api(ws.cookie, 'GET', '/apps/echo/whoami')).status).toBe(200);
  });

  it('sends a signed-out visitor to sign in and back; another workspace does not reach the app', async () => {
    const signedOut = await fetch(`${server.url}/apps/echo/whoami?x=1`, { redirect: 'manual' });
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get('location')).toBe(
      `/auth/v1/sign-in?${new URLSearchParams({ return_to: '/apps/echo/whoami?x=1' })}`,
    );
    const stranger = await fundedWorkspace();
    const other = await api(stranger.cookie, 'GET', '/apps/echo/whoami');
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toContain('text/html');
    expect((await api(stranger.cookie, 'GET', `/api/apps/${deployed.app.id}`)).status).toBe(404);
  });

  it('refuses a suspended workspace with a page', async () => {
    const suspended = await fundedWorkspace();
    await deploy(suspended, 'closed');
    await server.platform.context.operators.suspend({
      tenantId: suspended.tenantId,
      operator: 'test',
      reason: null,
    });
    const response = await api(suspended.cookie, 'GET', '/apps/closed/whoami');
    expect(response.status).toBe(403);
    expect(await response.text()).toContain('suspended');
  });

  it('sets a secret (restarting the app) and unsets it; names only, never values', async () => {
    const before = (await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}`)).json()).app.deployment
      .since;
    const set = await api(ws.cookie, 'PUT', `/api/apps/${deployed.app.id}/secrets/API_TOKEN`, {
      value: 'v-123',
    });
    expect(set.status).toBe(200);
    expect(await set.text()).not.toContain('v-123');
    const after = (await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}`)).json()).app;
    expect(after.deployment.state).toBe('running');
    expect(after.deployment.since).not.toBe(before);
    const names = await (await api(ws.cookie, 'GET', `/api/apps/${deployed.app.id}/secrets`)).json();
    expect(names.secrets).toEqual([{ name: 'API_TOKEN' }, { name: 'TOKEN' }]);
    // The platform's own names, and those that change how the process starts, are refused.
    for (const bad of [
      'lower',
      'PORT',
      'SERVICE_API_KEY',
      'A-B',
      'LD_PRELOAD',
      'NODE_OPTIONS',
      'NODE_REDIRECT_WARNINGS',
      'BASH_ENV',
      'OPENSSL_CONF',
      'GCONV_PATH',
    ]) {
      expect(
        (await api(ws.cookie, 'PUT', `/api/apps/${deployed.app.id}/secrets/${bad}`, { value: 'x' })).status,
      ).toBe(400);
    }
    expect(
      (await api(ws.cookie, 'PUT', `/api/apps/${deployed.app.id}/secrets/NODE_ENV`, { value: 'production' }))
        .status,
    ).toBe(200);
    expect((await api(ws.cookie, 'PUT', `/api/apps/${deployed.app.id}/secrets/X`, { value: 5 })).status).toBe(
      400,
    );
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${deployed.app.id}/secrets/API_TOKEN`)).status).toBe(
      200,
    );
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${deployed.app.id}/secrets/API_TOKEN`)).status).toBe(
      404,
    );
  });

  it('redeploys on a new release, stops (the proxy answers a page), and starts again', async () => {
    await publishTestRelease(server.platform, {
      slug: 'echo-tool',
      version: '1.1.0',
      wizardInputs: WIZARD,
      required: ['search'],
    });
    const redeployed = await api(ws.cookie, 'POST', `/api/apps/${deployed.app.id}/redeploy`, {});
    expect(redeployed.status).toBe(200);
    expect((await redeployed.json()).app).toMatchObject({
      version: '1.1.0',
      deployment: { state: 'running' },
    });
    expect((await api(ws.cookie, 'GET', '/apps/echo/healthz')).status).toBe(200);

    const stopping = Date.now();
    const stopped = await api(ws.cookie, 'POST', `/api/apps/${deployed.app.id}/stop`);
    const stoppedDeployment = (await stopped.json()).app.deployment;
    expect(stoppedDeployment).toMatchObject({ state: 'stopped', desiredState: 'stopped' });
    // Since it stopped, here and on an instance that never ran it (which reads the store).
    expect(Date.parse(stoppedDeployment.since)).toBeGreaterThanOrEqual(stopping - 1000);
    const elsewhere = await startPlatformAtOwnUrl(store, {});
    try {
      const seen = await elsewhere.platform.context.deployments.get(ws.tenantId, deployed.app.id);
      expect(Date.parse(seen.deployment!.since!)).toBeGreaterThanOrEqual(stopping - 1000);
    } finally {
      await elsewhere.close();
    }
    const down = await api(ws.cookie, 'GET', '/apps/echo/healthz');
    expect(down.status).toBe(503);
    // Stopped, it waits for a redeploy: asking again in a few seconds would not help.
    expect(down.headers.get('retry-after')).toBeNull();
    expect(await down.text()).toContain('not running');

    const back = await api(ws.cookie, 'POST', `/api/apps/${deployed.app.id}/redeploy`, { version: '1.0.0' });
    expect((await back.json()).app).toMatchObject({ version: '1.0.0', deployment: { state: 'running' } });
    expect(
      (await api(ws.cookie, 'POST', `/api/apps/${deployed.app.id}/redeploy`, { version: '9.9.9' })).status,
    ).toBe(404);
  });

  it('starts deployments that should run when a platform boots on the store, and stops them on close', async () => {
    const again = await startPlatformAtOwnUrl(store, {});
    try {
      // The first platform's child keeps running; the second starts its own.
      let state = '';
      for (let i = 0; i < 200 && state !== 'running'; i++) {
        state = again.platform.context.deployments.status(deployed.app.id).state;
        if (state !== 'running') await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(state).toBe('running');
      const endpoint = again.platform.context.deployments.endpoint(deployed.app.id)!;
      expect((await fetch(`${endpoint}/healthz`)).status).toBe(200);
      await again.close();
      await expect(fetch(`${endpoint}/healthz`)).rejects.toThrow();
    } finally {
      await again.close();
    }
  }, 30_000);

  it('deletes the app: stopped, its key revoked, its bindings and row gone, the deployer keeping nothing of it', async () => {
    const doomed = await deploy(ws, 'doomed');
    const endpoint = server.platform.context.deployments.endpoint(doomed.app.id)!;
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${doomed.app.id}`)).status).toBe(200);
    await expect(fetch(`${endpoint}/healthz`)).rejects.toThrow();
    // Not even when it stopped: the deployer would otherwise hold every app deleted since boot.
    expect(server.platform.context.deployments.status(doomed.app.id).since).toBeNull();
    const balance = await fetch(`${server.url}/api/billing/balance`, {
      headers: { authorization: `Bearer ${doomed.appKey.key}` },
    });
    expect(balance.status).toBe(401);
    expect((await api(ws.cookie, 'GET', `/api/apps/${doomed.app.id}`)).status).toBe(404);
    const bindings = await store.db
      .selectFrom('app_connections')
      .select('app_id')
      .where('app_id', '=', doomed.app.id)
      .execute();
    expect(bindings).toEqual([]);
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${doomed.app.id}`)).status).toBe(404);
  });

  it('answers one of parallel deletes of an app with 200 and the others with 404', async () => {
    const raced = await deploy(ws, 'raced');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => api(ws.cookie, 'DELETE', `/api/apps/${raced.app.id}`)),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 404, 404, 404, 404]);
  });
});

describe("secrets in the deployed process's environment", () => {
  /**
   * A tool that answers, for each variable it is asked about, the SHA-256 of its value (null when
   * unset): the test compares digests, so no secret value is printed by the app or by a failure.
   */
  const ENV_REPORTER = `const { createHash } = require('node:crypto');
const digest = (name) => process.env[name] === undefined ? null : createHash('sha256').update(process.env[name]).digest('hex');
require('node:http').createServer((q, s) => {
  s.setHeader('content-type', 'application/json');
  s.end(JSON.stringify({ API_TOKEN: digest('API_TOKEN'), TOKEN: digest('TOKEN') }));
}).listen(process.env.PORT, '127.0.0.1');`;
  const digest = (value: string) => createHash('sha256').update(value).digest('hex');

  it('hands a secret set under the app, and a secret wizard input, to the process; unset, it is gone', async () => {
    await publishTestRelease(server.platform, {
      slug: 'env-reporter',
      wizardInputs: [{ key: 'TOKEN', label: 'Token', type: 'secret', required: true }],
      artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', ENV_REPORTER] },
    });
    const ws = await fundedWorkspace();
    const token = randomBytes(12).toString('hex');
    const created = await api(ws.cookie, 'POST', '/api/deploy', {
      toolSlug: 'env-reporter',
      slug: 'env',
      inputs: { TOKEN: token },
    });
    expect(created.status).toBe(201);
    const { app } = (await created.json()) as { app: { id: string } };
    const seen = async () =>
      (await (await api(ws.cookie, 'GET', '/apps/env/')).json()) as Record<string, unknown>;
    expect(await seen()).toEqual({ API_TOKEN: null, TOKEN: digest(token) });

    // Set through the apps API: the app restarts with it; set again, with the new value.
    for (const value of [randomBytes(12).toString('hex'), randomBytes(12).toString('hex')]) {
      const set = await api(ws.cookie, 'PUT', `/api/apps/${app.id}/secrets/API_TOKEN`, { value });
      expect(set.status).toBe(200);
      expect(await seen()).toEqual({ API_TOKEN: digest(value), TOKEN: digest(token) });
    }
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${app.id}/secrets/API_TOKEN`)).status).toBe(200);
    expect(await seen()).toEqual({ API_TOKEN: null, TOKEN: digest(token) });
    // A redeploy keeps what the app holds.
    expect(
      (await api(ws.cookie, 'PUT', `/api/apps/${app.id}/secrets/API_TOKEN`, { value: token })).status,
    ).toBe(200);
    expect((await api(ws.cookie, 'POST', `/api/apps/${app.id}/redeploy`, {})).status).toBe(200);
    expect(await seen()).toEqual({ API_TOKEN: digest(token), TOKEN: digest(token) });
  }, 60_000);

  it("hands a rotated App Key to the deployment holding it, refuses to revoke it, and re-keys a stranded one's redeploy", async () => {
    const KEY_REPORTER = `const { createHash } = require('node:crypto');
require('node:http').createServer((q, s) => {
  s.end(createHash('sha256').update(process.env.SERVICE_API_KEY ?? '').digest('hex'));
}).listen(process.env.PORT, '127.0.0.1');`;
    await publishTestRelease(server.platform, {
      slug: 'key-reporter',
      artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', KEY_REPORTER] },
    });
    const ws = await fundedWorkspace();
    const created = await api(ws.cookie, 'POST', '/api/deploy', { toolSlug: 'key-reporter', slug: 'keyed' });
    expect(created.status).toBe(201);
    const { app, appKey } = (await created.json()) as {
      app: { id: string };
      appKey: { id: string; key: string };
    };
    const held = async () => (await api(ws.cookie, 'GET', '/apps/keyed/')).text();
    expect(await held()).toBe(digest(appKey.key));

    // Rotated at once: the deployment is handed the new key and restarted with it.
    const rotated = await api(ws.cookie, 'POST', `/api/keys/${appKey.id}/rotate`, { overlapSeconds: 0 });
    expect(rotated.status).toBe(201);
    const fresh = (await rotated.json()) as { key: { id: string }; apiKey: string; deployment: unknown };
    expect(fresh.deployment).toEqual({ appId: app.id, slug: 'keyed', state: 'running' });
    expect(await held()).toBe(digest(fresh.apiKey));
    // The listing names the deployment holding a key: the new one, no longer the old.
    const listed = (await (await api(ws.cookie, 'GET', '/api/keys')).json()) as {
      keys: { id: string; deployment: unknown }[];
    };
    expect(listed.keys.map((key) => [key.id, key.deployment])).toEqual([
      [fresh.key.id, { appId: app.id, slug: 'keyed', name: 'Tool key-reporter' }],
    ]);
    // A restart hands the new key over again.
    expect((await api(ws.cookie, 'POST', `/api/apps/${app.id}/redeploy`, {})).status).toBe(200);
    expect(await held()).toBe(digest(fresh.apiKey));

    // Revoking the key the deployment holds is refused, naming the deployment and the way out.
    const revoked = await api(ws.cookie, 'DELETE', `/api/keys/${fresh.key.id}`);
    expect(revoked.status).toBe(409);
    expect(await revoked.json()).toEqual({
      message: expect.stringContaining('"keyed": rotate it'),
      code: 'DEPLOYMENT_KEY',
    });

    // A deployment stranded with a dead key (revoked before these rules): a redeploy gives it a new one.
    await store.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', fresh.key.id)
      .execute();
    expect((await api(ws.cookie, 'POST', `/api/apps/${app.id}/redeploy`, {})).status).toBe(200);
    const rekeyed = await held();
    expect(rekeyed).not.toBe(digest(fresh.apiKey));
    const row = await store.db
      .selectFrom('deployments')
      .innerJoin('api_keys', 'api_keys.id', 'deployments.app_key_id')
      .select(['api_keys.revoked_at', 'api_keys.name'])
      .where('deployments.app_id', '=', app.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ revoked_at: null, name: 'Deployment keyed' });
  }, 60_000);
});

describe('restart_on in the manifest', () => {
  const IDLE_SERVER = `require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT, '127.0.0.1');`;

  it("restarts a deployment on an event its manifest names (a bound connection's change), not on others", async () => {
    const PID_REPORTER = `require('node:http').createServer((q, s) => s.end(String(process.pid))).listen(process.env.PORT, '127.0.0.1');`;
    const artifact = { type: 'directory' as const, path: process.cwd(), start: ['node', '-e', PID_REPORTER] };
    await publishTestRelease(server.platform, {
      slug: 'restarter',
      required: ['search'],
      restartOn: ['connection.changed'],
      artifact,
    });
    await publishTestRelease(server.platform, { slug: 'steady', required: ['search'], artifact });
    const ws = await fundedWorkspace();
    for (const slug of ['restarter', 'steady']) {
      expect((await api(ws.cookie, 'POST', '/api/deploy', { toolSlug: slug, slug })).status).toBe(201);
    }
    const pid = async (slug: string) => (await api(ws.cookie, 'GET', `/apps/${slug}/`)).text();
    const before = { restarter: await pid('restarter'), steady: await pid('steady') };
    const connections = (await (await api(ws.cookie, 'GET', '/api/connections')).json()) as {
      connections: { id: string }[];
    };
    const renamed = await api(ws.cookie, 'PATCH', `/api/connections/${connections.connections[0]!.id}`, {
      display_name: 'renamed',
    });
    expect(renamed.status).toBe(200);
    let now = before.restarter;
    for (let i = 0; i < 100 && (now === before.restarter || now.length === 0); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const answer = await api(ws.cookie, 'GET', '/apps/restarter/');
      now = answer.status === 200 ? await answer.text() : '';
    }
    expect(now).not.toBe(before.restarter);
    expect(await pid('steady')).toBe(before.steady);
  }, 60_000);

  it('parses no event notice while no deployment running here lists restart_on kinds, nor one naming none of those that do', async () => {
    const artifact = { type: 'directory' as const, path: process.cwd(), start: ['node', '-e', IDLE_SERVER] };
    await publishTestRelease(server.platform, {
      slug: 'listener',
      restartOn: ['connection.changed'],
      artifact,
    });
    await publishTestRelease(server.platform, { slug: 'metered', artifact });
    const ws = await fundedWorkspace();
    // The follower as the platform wires it, on a store that hands its handler over.
    let handle: (payload: string | null) => void = () => {};
    await server.platform.context.deployments.followRestartEvents({
      listen: async (_channel, handler) => {
        handle = handler;
        return async () => {};
      },
    });
    const notice = (appId: string, kind: string) => JSON.stringify({ e: [[appId, 1, { kind, data: {} }]] });
    /** Whether handing the notice to the follower parsed it (its parse runs before its first await). */
    const parsed = (payload: string) => {
      const parse = vi.spyOn(JSON, 'parse');
      try {
        handle(payload);
        return parse.mock.calls.some(([text]) => text === payload);
      } finally {
        parse.mockRestore();
      }
    };
    const deployed = async (slug: string) => {
      const response = await api(ws.cookie, 'POST', '/api/deploy', { toolSlug: slug, slug });
      expect(response.status).toBe(201);
      return ((await response.json()) as { app: { id: string } }).app.id;
    };

    const metered = await deployed('metered');
    expect(parsed(notice(metered, 'billing.usage_recorded'))).toBe(false);
    const listener = await deployed('listener');
    expect(parsed(notice(metered, 'billing.usage_recorded'))).toBe(false);
    expect(parsed(notice(listener, 'billing.usage_recorded'))).toBe(true);
    expect((await api(ws.cookie, 'POST', `/api/apps/${listener}/stop`)).status).toBe(200);
    expect(parsed(notice(listener, 'connection.changed'))).toBe(false);
    expect((await api(ws.cookie, 'POST', `/api/apps/${listener}/redeploy`, {})).status).toBe(200);
    // A kind it does not list: parsed, but restarting nothing that would race the delete below.
    expect(parsed(notice(listener, 'app.custom'))).toBe(true);
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${listener}`)).status).toBe(200);
    expect(parsed(notice(listener, 'connection.changed'))).toBe(false);
  }, 60_000);
});

describe('a delete racing a restart of the same app', () => {
  const IDLE_SERVER = `require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT, '127.0.0.1');`;
  const original = LocalDeployer.prototype.deploy;
  beforeAll(async () => {
    await publishTestRelease(server.platform, {
      slug: 'racer',
      artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', IDLE_SERVER] },
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /**
   * A running app whose next deploy (the restart a secret's change makes) is held until the app's
   * delete has handed the deployer its remove, so that the start is queued behind the delete's stop
   * (the order a restart that read the deployment before the delete gets). With `dropSignal` the
   * start is handed on without its signal, as a deployer that does not look at it would take it.
   */
  async function raceRestartWithDelete(slug: string, { dropSignal = false } = {}) {
    const ws = await fundedWorkspace();
    const created = await api(ws.cookie, 'POST', '/api/deploy', { toolSlug: 'racer', slug });
    expect(created.status).toBe(201);
    const { app } = (await created.json()) as { app: { id: string } };
    const deployments = server.platform.context.deployments;
    const endpoint = deployments.endpoint(app.id)!;

    let reached: () => void = () => {};
    const restartReached = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release: () => void = () => {};
    let heldStart: Promise<void> | null = null;
    const removeCalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    vi.spyOn(LocalDeployer.prototype, 'deploy').mockImplementation(async function (
      this: LocalDeployer,
      spec,
      options,
    ) {
      if (spec.appId !== app.id) return original.call(this, spec, options);
      reached();
      await removeCalled;
      heldStart = original.call(this, spec, dropSignal ? {} : options);
      return heldStart;
    });
    const originalRemove = LocalDeployer.prototype.remove;
    vi.spyOn(LocalDeployer.prototype, 'remove').mockImplementation(function (this: LocalDeployer, appId) {
      const removing = originalRemove.call(this, appId);
      // The held restart's deploy comes in now: behind this stop in the app's queue.
      if (appId === app.id) release();
      return removing;
    });

    const secret = api(ws.cookie, 'PUT', `/api/apps/${app.id}/secrets/API_TOKEN`, { value: 'v' });
    await restartReached;
    expect((await api(ws.cookie, 'DELETE', `/api/apps/${app.id}`)).status).toBe(200);
    // The secret was set before the delete; its restart is nothing for an app that is gone.
    expect((await secret).status).toBe(200);
    return { appId: app.id, endpoint, deployments, heldStart: heldStart! as Promise<void> };
  }

  it('starts nothing for the deleted app: the restart queued behind its stop is called off', async () => {
    const { appId, endpoint, deployments, heldStart } = await raceRestartWithDelete('race-queued');
    // Called off in its turn: no process was started (and then stopped) for it.
    await expect(heldStart).rejects.toThrow('called off');
    expect(deployments.status(appId)).toEqual({ state: 'stopped', restarts: 0, lastExit: null, since: null });
    expect(deployments.endpoint(appId)).toBeNull();
    await expect(fetch(`${endpoint}/`)).rejects.toThrow();
  }, 30_000);

  it('stops what a deployer started anyway for an app deleted meanwhile, and keeps nothing of it', async () => {
    const { appId, deployments, heldStart } = await raceRestartWithDelete('race-started', {
      dropSignal: true,
    });
    await heldStart;
    expect(deployments.status(appId)).toEqual({ state: 'stopped', restarts: 0, lastExit: null, since: null });
    expect(deployments.endpoint(appId)).toBeNull();
  }, 30_000);
});

describe('refusals of POST /api/deploy', () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await fundedWorkspace();
  });
  const refusal = async (cookie: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await api(cookie, 'POST', '/api/deploy', body, headers);
    return { status: response.status, body: await response.json() };
  };

  it('answers the billing gate: never funded, then out of credit', async () => {
    const broke = await fundedWorkspace(0);
    expect(await refusal(broke.cookie, deployBody('app-a'))).toEqual({
      status: 402,
      body: { message: 'Add credit to this workspace before deploying', code: 'BILLING_NOT_SETUP' },
    });
    await post(store.db, {
      tenantId: broke.tenantId,
      amountMicros: 1000,
      kind: 'grant',
      idempotencyKey: `g-${broke.tenantId}`,
    });
    await post(store.db, {
      tenantId: broke.tenantId,
      amountMicros: -1000,
      kind: 'adjustment',
      idempotencyKey: `a-${broke.tenantId}`,
    });
    server.platform.context.balances.invalidate(broke.tenantId);
    const out = await refusal(broke.cookie, deployBody('app-a'));
    expect(out.status).toBe(402);
    expect(out.body.code).toBe('INSUFFICIENT_CREDITS');
  });

  it('refuses bad bodies and inputs with 400 and a message', async () => {
    const cases: Array<[unknown, RegExp]> = [
      ['{not json', /JSON|read/i],
      [{ slug: 'abc' }, /toolSlug/],
      [{ ...deployBody('Bad Slug') }, /slug/],
      [{ ...deployBody('ok-slug'), extra: 1 }, /extra|Unrecognized/i],
      [{ ...deployBody('ok-slug'), name: 'ok\u0007bell' }, /name: must not contain control characters/],
      [{ ...deployBody('ok-slug'), inputs: {} }, /GREETING.*required/],
      [{ ...deployBody('ok-slug'), inputs: { GREETING: 'x', LIMIT: 'many' } }, /LIMIT.*number/],
      [{ ...deployBody('ok-slug'), inputs: { GREETING: 'x', NOPE: '1' } }, /Unknown input "NOPE"/],
      [{ ...deployBody('ok-slug'), inputs: { GREETING: { deep: 1 } } }, /inputs/],
      [
        { ...deployBody('ok-slug'), connections: { llm: crypto.randomUUID() } },
        /does not use the integration "llm"/,
      ],
      [{ ...deployBody('ok-slug'), connections: { search: crypto.randomUUID() } }, /not a search connection/],
    ];
    for (const [body, message] of cases) {
      const answer = await refusal(ws.cookie, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.message).toMatch(message);
    }
  });

  it('answers 404 for an unknown tool or version, 409 for a missing integration or a taken slug', async () => {
    expect((await refusal(ws.cookie, { ...deployBody('app-x'), toolSlug: 'nope' })).body.code).toBe(
      'TOOL_NOT_FOUND',
    );
    expect((await refusal(ws.cookie, { ...deployBody('app-x'), version: '0.0.1' })).status).toBe(404);
    const bare = await fundedWorkspace();
    await store.db
      .updateTable('connections')
      .set({ status: 'revoked' })
      .where('tenant_id', '=', bare.tenantId)
      .execute();
    const missing = await refusal(bare.cookie, deployBody('app-x'));
    expect(missing).toMatchObject({ status: 409, body: { code: 'INTEGRATION_REQUIRED' } });
    await deploy(ws, 'taken');
    expect(await refusal(ws.cookie, deployBody('taken'))).toEqual({
      status: 409,
      body: { message: 'This workspace already has an app "taken"', code: 'SLUG_TAKEN' },
    });
  }, 30_000);

  it('answers 403 TOOL_UNRELEASED for a tool whose every release was withdrawn', async () => {
    const { toolId } = await publishTestRelease(server.platform, {
      slug: 'withdrawn-tool',
      wizardInputs: WIZARD,
      required: ['search'],
    });
    await store.db
      .updateTable('tool_releases')
      .set({ status: 'withdrawn' })
      .where('tool_id', '=', toolId)
      .execute();
    expect(await refusal(ws.cookie, { ...deployBody('app-w'), toolSlug: 'withdrawn-tool' })).toEqual({
      status: 403,
      body: { message: 'The tool has no active release', code: 'TOOL_UNRELEASED' },
    });
  });

  it('replays the answer of an Idempotency-Key byte for byte, and refuses it with another body', async () => {
    const headers = { 'idempotency-key': `deploy-${randomBytes(4).toString('hex')}` };
    const first = await api(ws.cookie, 'POST', '/api/deploy', deployBody('once'), headers);
    const firstText = await first.text();
    expect(first.status).toBe(201);
    const again = await api(ws.cookie, 'POST', '/api/deploy', deployBody('once'), headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    // Both carry the App Key: no cache keeps either.
    for (const answer of [first, again]) expect(answer.headers.get('cache-control')).toBe('no-store');
    const apps = await store.db
      .selectFrom('apps')
      .select('id')
      .where('tenant_id', '=', ws.tenantId)
      .where('slug', '=', 'once')
      .execute();
    expect(apps).toHaveLength(1);
    // The remembered answer holds the App Key: sealed at rest.
    const key = JSON.parse(firstText).appKey.key as string;
    const records = await store.db.selectFrom('idempotency_records').select('body').execute();
    expect(records.some((r) => r.body.includes(key))).toBe(false);
    const other = await refusal(ws.cookie, deployBody('twice'), headers);
    expect(other).toMatchObject({ status: 409, body: { code: 'IDEMPOTENCY_CONFLICT' } });
  }, 30_000);

  it('answers 502 when the deployer cannot start the release, and leaves nothing behind', async () => {
    await publishTestRelease(server.platform, {
      slug: 'broken-tool',
      artifact: {
        type: 'directory',
        path: process.cwd(),
        start: ['node', '-e', 'console.error("boom"); process.exit(3)'],
      },
    });
    const answer = await refusal(ws.cookie, { toolSlug: 'broken-tool', slug: 'broken' });
    expect(answer.status).toBe(502);
    expect(answer.body.code).toBe('DEPLOY_FAILED');
    expect(answer.body.message).toContain('exit 3');
    expect(answer.body.message).toContain('boom');
    const app = await store.db
      .selectFrom('apps')
      .select('id')
      .where('tenant_id', '=', ws.tenantId)
      .where('slug', '=', 'broken')
      .execute();
    expect(app).toEqual([]);
    const keys = await store.db
      .selectFrom('api_keys')
      .select('id')
      .where('name', '=', 'Deployment broken')
      .execute();
    expect(keys).toEqual([]);
  }, 30_000);

  it("deploys a workspace's own tool for that workspace only", async () => {
    const tiny =
      "require('node:http').createServer((q, s) => s.end('own')).listen(process.env.PORT, '127.0.0.1')";
    await publishTestRelease(server.platform, {
      slug: 'own-tool',
      ownerTenantId: ws.tenantId,
      artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', tiny] },
    });
    const stranger = await fundedWorkspace();
    expect(await refusal(stranger.cookie, { toolSlug: 'own-tool', slug: 'theirs' })).toMatchObject({
      status: 404,
      body: { code: 'TOOL_NOT_FOUND' },
    });
    const own = await api(ws.cookie, 'POST', '/api/deploy', { toolSlug: 'own-tool', slug: 'mine' });
    expect(own.status).toBe(201);
    expect(await (await api(ws.cookie, 'GET', '/apps/mine/')).text()).toBe('own');
  });

  it("drops an app's Set-Cookie of the platform's session cookie, however it spaces the name", async () => {
    const cookies = [
      'service_session=plain; Path=/',
      'service_session =spaced; Path=/',
      '\tservice_session\t=tabbed; Path=/',
      ' service_session=leading; Path=/',
      'theme=dark; Path=/apps/cookies',
    ];
    const setting = `require('node:http').createServer((q, r) => { r.setHeader('set-cookie', ${JSON.stringify(cookies)}); r.end('ok'); }).listen(process.env.PORT, '127.0.0.1')`;
    expect((await deployScript(ws.cookie, 'cookie-tool', 'cookies', setting)).status).toBe(201);
    const response = await api(ws.cookie, 'GET', '/apps/cookies/');
    expect(response.status).toBe(200);
    expect(response.headers.getSetCookie()).toEqual(['theme=dark; Path=/apps/cookies']);
  }, 30_000);

  it('ends a WebSocket through the proxy once the client ends its side, though the app keeps its own open', async () => {
    // An app that leaves its WebSocket open until the other side closes it (no 'end' handling).
    const holding = [
      "const s = require('node:http').createServer((q, r) => r.end('ok'));",
      "s.on('upgrade', (q, socket) => socket.write('HTTP/1.1 101 Switching Protocols\\r\\nupgrade: websocket\\r\\nconnection: Upgrade\\r\\n\\r\\n'));",
      "s.listen(process.env.PORT, '127.0.0.1');",
    ].join(' ');
    expect((await deployScript(ws.cookie, 'holding-tool', 'holding', holding)).status).toBe(201);
    const url = new URL(server.url);
    const client = connect(Number(url.port), url.hostname);
    client.write(
      `GET /apps/holding/ws HTTP/1.1\r\nhost: ${url.host}\r\ncookie: ${ws.cookie}\r\norigin: ${url.origin}\r\n` +
        'connection: Upgrade\r\nupgrade: websocket\r\n\r\n',
    );
    const first = await new Promise<Buffer>((resolve) => client.once('data', resolve));
    expect(first.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /);
    // The client goes away without a close frame (its FIN only): the platform closes its side
    // and the app's, rather than holding both half-open for as long as the app keeps its own.
    const closed = new Promise<string>((resolve) => client.once('close', () => resolve('closed')));
    client.end();
    const after = new Promise<string>((resolve) => setTimeout(() => resolve('still open'), 3000));
    expect(await Promise.race([closed, after])).toBe('closed');
    client.destroy();
  }, 30_000);

  it('refuses viewers (403), signed-out callers (401) and cross-origin writes (403)', async () => {
    const viewer = await signedInTeammate(server, ws.tenantId, 'viewer', `viewer-${++emails}@example.test`);
    expect((await refusal(viewer, deployBody('app-v'))).status).toBe(403);
    expect((await refusal('', deployBody('app-v'))).status).toBe(401);
    for (const cookie of [viewer, '']) {
      const refused = await api(cookie, 'POST', '/api/deploy', deployBody('app-v'));
      expect(refused.headers.get('cache-control')).toBe('no-store');
    }
    expect((await refusal(ws.cookie, deployBody('app-v'), { origin: 'http://evil.example' })).status).toBe(
      403,
    );
  });
});

describe('the deploy rate limit and the deployer in production', () => {
  it('counts 5 deploy requests an hour per address in the store', async () => {
    // A store of its own: the other tests' deploys from this address count in theirs.
    const own = await openTestStore();
    const limited = await startPlatformAtOwnUrl(own, { deployer: false });
    try {
      const cookie = await devSignIn(limited, `limited-${++emails}@example.test`);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const response = await fetch(`${limited.url}/api/deploy`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json' },
          body: '{}',
        });
        statuses.push(response.status);
        if (response.status === 429) expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      expect(statuses).toEqual([400, 400, 400, 400, 400, 429]);
    } finally {
      await limited.close();
      await own.dispose();
    }
  });

  it("spends nothing on a retry of a deploy's Idempotency-Key: a double submit cannot use up the hour", async () => {
    const own = await openTestStore();
    const limited = await startPlatformAtOwnUrl(own);
    try {
      const cookie = await devSignIn(limited, `retried-${++emails}@example.test`);
      const send = (headers: Record<string, string>) =>
        fetch(`${limited.url}/api/deploy`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ toolSlug: 'no-such-tool', slug: 'retried' }),
        });
      // One deploy (refused: no credit yet, an answer like any), then its retries: all the replay.
      const retried: (string | null)[] = [];
      for (let i = 0; i < 7; i++) {
        const response = await send({ 'idempotency-key': 'double-submit' });
        expect(response.status).toBe(402);
        retried.push(response.headers.get('idempotent-replayed'));
      }
      expect(retried).toEqual([null, 'true', 'true', 'true', 'true', 'true', 'true']);
      // The hour still holds the other 4 requests, then 429.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await send({})).status);
      expect(statuses).toEqual([402, 402, 402, 402, 429]);
    } finally {
      await limited.close();
      await own.dispose();
    }
  });

  it('runs no local deployer in production unless SERVICE_LOCAL_DEPLOYER=1 enables it', async () => {
    const identity = { verify: async () => null } as never;
    for (const [env, enabled] of [
      [{}, false],
      [{ SERVICE_LOCAL_DEPLOYER: '1' }, true],
    ] as const) {
      const platform = await createPlatform({
        store,
        production: true,
        identity,
        env,
        logger: silentLogger,
        encryptionKey: TEST_ENCRYPTION_KEY,
      });
      expect(platform.context.deployments.enabled).toBe(enabled);
      await platform.close();
    }
  });
});
