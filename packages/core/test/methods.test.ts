/**
 * A method a path does not take, over real HTTP: 405 `method_not_allowed` with an `Allow` that
 * lists exactly the methods the path's routes take, read from the platform's own route table.
 * Unknown paths stay 404, and OPTIONS stays 404 where no CORS preflight answers it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningPlatform, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

let store: TestStore;
let server: RunningPlatform;

beforeAll(async () => {
  store = await openTestStore();
  server = await startPlatform(store);
});

afterAll(async () => {
  await server?.close();
  await store?.dispose();
});

/** The methods a caller may try, OPTIONS aside (its own rule is below). */
const PROBED = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Representative paths of each router, with the methods their routes take. */
const PATHS: { router: string; path: string; allow: string }[] = [
  { router: 'balance', path: '/api/billing/balance', allow: 'GET, HEAD, OPTIONS' },
  { router: 'balance', path: '/api/v1/balance', allow: 'GET, HEAD, OPTIONS' },
  { router: 'balance', path: '/api/cli/balance', allow: 'GET, HEAD' },
  { router: 'runtime', path: '/api/deployments/me/connections', allow: 'GET, HEAD' },
  { router: 'runtime', path: '/api/deployments/me/users/u1/connections', allow: 'GET, HEAD, POST' },
  { router: 'runtime', path: '/api/deployments/me/users/u1/connections/c1', allow: 'GET, HEAD, DELETE' },
  { router: 'connections', path: '/api/connections', allow: 'GET, HEAD, POST' },
  { router: 'connections', path: '/api/connections/c1', allow: 'GET, HEAD, PATCH, DELETE' },
  { router: 'connections', path: '/api/connections/c1/keys/k1', allow: 'DELETE' },
  { router: 'deploy', path: '/api/deploy', allow: 'POST' },
  { router: 'apps', path: '/api/apps/a1', allow: 'GET, HEAD, PATCH, DELETE' },
  { router: 'apps', path: '/api/apps/a1/secrets/NAME', allow: 'PUT, DELETE' },
  { router: 'apps', path: '/api/apps/a1/stop', allow: 'POST' },
  { router: 'keys', path: '/api/keys', allow: 'GET, HEAD, POST' },
  { router: 'keys', path: '/api/keys/k1', allow: 'PATCH, DELETE' },
  { router: 'keys', path: '/api/keys/k1/rotate', allow: 'POST' },
  { router: 'spend caps', path: '/api/billing/spend-caps', allow: 'GET, HEAD, PUT' },
  { router: 'usage', path: '/api/billing/usage', allow: 'GET, HEAD' },
  { router: 'integrations', path: '/api/integrations/some-slug', allow: 'GET, HEAD, POST' },
  { router: 'pricing', path: '/api/pricing/public/some-slug', allow: 'GET, HEAD' },
  { router: 'admin', path: '/api/admin/tenants/t1/suspend', allow: 'POST' },
  { router: 'admin oauth', path: '/api/admin/integrations/some-slug/oauth', allow: 'GET, HEAD, PUT, DELETE' },
  { router: 'oauth', path: '/api/oauth/some-provider/start', allow: 'GET, HEAD, POST' },
  { router: 'admin tools', path: '/api/admin/tools/some-slug', allow: 'PATCH' },
  { router: 'tools', path: '/api/tools/some-slug/usage-framing', allow: 'GET, HEAD' },
  { router: 'billing', path: '/api/billing/customer', allow: 'GET, HEAD, PATCH' },
  { router: 'billing', path: '/api/billing/purchase', allow: 'POST' },
  { router: 'workspaces', path: '/api/tenants/me', allow: 'GET, HEAD, PATCH' },
  { router: 'members', path: '/api/tenants/me/members/u1', allow: 'PATCH, DELETE' },
  { router: 'auth', path: '/api/auth/session', allow: 'POST, DELETE' },
  { router: 'cli', path: '/api/cli/ssh-sessions/claim', allow: 'POST' },
  { router: 'health', path: '/healthz', allow: 'GET, HEAD' },
  { router: 'dashboard', path: '/sign-out', allow: 'POST' },
  { router: 'dashboard', path: '/dashboard/live', allow: 'GET, HEAD' },
  { router: 'dashboard assets', path: '/static/dashboard/app.css', allow: 'GET, HEAD' },
  { router: 'billing pages', path: '/billing/purchases/p1', allow: 'GET, HEAD, POST' },
  { router: 'invitation pages', path: '/invitations/accept', allow: 'GET, HEAD, POST' },
  { router: 'development IdP', path: '/auth/v1/token', allow: 'POST' },
  { router: 'development IdP', path: '/auth/v1/.well-known/jwks.json', allow: 'GET, HEAD' },
];

const send = (method: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method, headers, redirect: 'manual' });

describe.each(PATHS)('$router: $path takes $allow', ({ path, allow }) => {
  const allowed = allow.split(', ');

  it.each(PROBED.filter((method) => !allowed.includes(method)))(
    'answers %s with 405, Allow and the canonical body',
    async (method) => {
      const response = await send(method, path);
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe(allow);
      expect(response.headers.get('service-error-code')).toBe('method_not_allowed');
      if (method === 'HEAD') return;
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await response.json()).toEqual({
        error: {
          code: 'method_not_allowed',
          message: `This address does not take ${method} requests; it takes ${allow}`,
        },
      });
    },
  );

  // Allow is exact: every method it lists reaches a route (whatever that route then answers).
  it.each(PROBED.filter((method) => allowed.includes(method)))('serves %s', async (method) => {
    const response = await send(method, path);
    expect(response.status).not.toBe(405);
    await response.body?.cancel();
  });
});

/** Every endpoint the API reference documents (`docs/api/*.md`), `{param}`s filled in, by path. */
function documentedEndpoints(): Map<string, Set<string>> {
  const dir = join(import.meta.dirname, '../../../docs/api');
  const byPath = new Map<string, Set<string>>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.md'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const [, method, path] of text.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/[^`?\s]+)/gm)) {
      const filled = path!.replace(/\{[^}]+\}/g, 'x1');
      byPath.set(filled, (byPath.get(filled) ?? new Set()).add(method!));
    }
  }
  return byPath;
}

describe('every documented endpoint', () => {
  const endpoints = [...documentedEndpoints()];

  it('is read from the API reference', () => {
    expect(endpoints.length).toBeGreaterThan(50);
  });

  it.each(endpoints)(
    '%s: its documented methods are in Allow, and a method it does not take is 405',
    async (path, methods) => {
      const other = PROBED.find((method) => method !== 'HEAD' && !methods.has(method));
      if (!other) return;
      const refused = await send(other, path);
      expect(refused.status).toBe(405);
      const allow = refused.headers.get('allow')!.split(', ');
      for (const method of methods) expect(allow).toContain(method);
      for (const method of allow.filter((m) => m !== 'OPTIONS')) {
        const served = await send(method, path);
        expect(served.status).not.toBe(405);
        await served.body?.cancel();
      }
    },
  );
});

it('answers HEAD on a GET route as GET, without a body', async () => {
  const get = await send('GET', '/healthz');
  const head = await send('HEAD', '/healthz');
  expect(head.status).toBe(get.status);
  expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
  expect(await head.text()).toBe('');
});

it.each([
  ['GET', '/api/no-such-thing'],
  ['DELETE', '/api/no-such-thing'],
  ['POST', '/api/keys/k1/no-such-thing'],
  ['PUT', '/no-such-page'],
  ['OPTIONS', '/api/no-such-thing'],
])('answers %s %s (no such path) with 404 as before', async (method, path) => {
  const response = await send(method, path);
  expect(response.status).toBe(404);
  expect(response.headers.get('allow')).toBeNull();
  expect(await response.json()).toEqual({ message: 'Not found' });
});

describe('OPTIONS', () => {
  it.each(['/api/cli/balance', '/api/keys', '/api/deploy'])(
    'stays 404 on %s, which has no CORS preflight',
    async (path) => {
      const response = await send('OPTIONS', path, {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
      });
      expect(response.status).toBe(404);
      expect(response.headers.get('allow')).toBeNull();
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
    },
  );

  it('answers the preflight where the path has one', async () => {
    const response = await send('OPTIONS', '/api/billing/balance', {
      origin: 'https://app.example.com',
      'access-control-request-method': 'GET',
    });
    expect(response.status).toBeLessThan(300);
  });
});

it("keeps a route's own 404 for a method the path takes", async () => {
  const response = await send('GET', '/api/pricing/public/no-such-slug');
  expect(response.status).toBe(404);
  expect(response.headers.get('allow')).toBeNull();
});

describe('dashboard pages', () => {
  const browser = { accept: 'text/html,application/xhtml+xml' };

  it('answers a browser posting to a page without forms with a 405 page', async () => {
    const response = await send('POST', '/pricing', browser);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const page = await response.text();
    expect(page).toContain('This page does not take that kind of request.');
    expect(page).toContain('Method not allowed');
  });

  it('answers an API client the same with the JSON 405', async () => {
    const response = await send('POST', '/pricing');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(response.headers.get('service-error-code')).toBe('method_not_allowed');
  });

  it('still answers a browser asking for no such page with the 404 page', async () => {
    const response = await send('GET', '/no-such-page', browser);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('There is no page at this address.');
  });
});
