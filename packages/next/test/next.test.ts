/**
 * The Next.js handlers forward to the wire, with the caller's address only where the host said
 * to read it; the well-known handler answers the door's documents and 404s the rest.
 */
import { silentLogger } from '@service/core/http';
import { createService, type Service } from '@service/core/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';
import { type NextHandlerOptions, toNextHandlers, toNextWellKnownHandler } from '../src/index.js';

function fakeService(): Service & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    fetch: async (request) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    },
    wellKnown: async (request) =>
      new URL(request.url).pathname === '/.well-known/mcp-server-card' ? new Response('card') : null,
    close: async () => {},
    context: {} as never,
    door: null,
  };
}

describe('@service/next', () => {
  it('maps every method to the wire, resolving a service factory once', async () => {
    const service = fakeService();
    let made = 0;
    const handlers = toNextHandlers(async () => {
      made++;
      return service;
    });
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
      const response = await handlers[method](new Request('http://h/api/service/threads', { method }));
      expect(response.status).toBe(200);
    }
    expect(service.seen).toEqual([
      'GET /api/service/threads',
      'POST /api/service/threads',
      'PUT /api/service/threads',
      'PATCH /api/service/threads',
      'DELETE /api/service/threads',
      'OPTIONS /api/service/threads',
    ]);
    expect(made).toBe(1);
  });

  it('answers 503 unavailable while the service factory fails, and asks it again on the next request', async () => {
    const service = fakeService();
    let made = 0;
    const handlers = toNextHandlers(async () => {
      made++;
      if (made === 1) throw new Error('database briefly unreachable');
      return service;
    });
    const first = await handlers.GET(new Request('http://h/api/service/threads'));
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(await first.json()).toEqual({ error: { code: 'unavailable', message: expect.any(String) } });
    expect((await handlers.GET(new Request('http://h/api/service/threads'))).status).toBe(200);
    expect((await handlers.GET(new Request('http://h/api/service/threads'))).status).toBe(200);
    expect(made).toBe(2);
  });

  it('answers the door’s well-known documents and 404 for other paths', async () => {
    const { GET } = toNextWellKnownHandler(fakeService());
    expect(await (await GET(new Request('http://h/.well-known/mcp-server-card'))).text()).toBe('card');
    expect((await GET(new Request('http://h/.well-known/security.txt'))).status).toBe(404);
  });
});

describe('the caller’s address', () => {
  const ORIGIN = 'http://host.test';
  const BURST = '198.51.100.7';
  let store: TestStore;
  let service: Service;

  const serviceOn = (env: Record<string, string> = {}) =>
    createService({
      store,
      principal: () => null,
      mcp: { productName: 'Acme' },
      oauth: { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) },
      env: { SERVICE_BASE_URL: ORIGIN, ...env },
      logger: silentLogger,
      development: false,
      overrides: false,
    });

  /** One dynamic client registration through handlers made with `options`. */
  const register = (options: NextHandlerOptions, headers: Record<string, string>, to = service) =>
    toNextHandlers(to, options)
      .POST(
        new Request(`${ORIGIN}/api/service/mcp/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9999/callback'] }),
        }),
      )
      .then((response) => response.status);

  // The door admits 60 registrations a minute per address: spend BURST's budget once, through a
  // proxy that appended it after whatever the caller sent, then probe who counts as BURST.
  beforeAll(async () => {
    store = await openTestStore();
    service = await serviceOn();
    // Fixed one-minute windows: start where the window has room for the burst and the probes.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    for (let i = 0; i < 60; i++) {
      const status = await register({ trustProxy: true }, { 'x-forwarded-for': `203.0.113.${i}, ${BURST}` });
      if (status !== 201) throw new Error(`registration ${i + 1} answered ${status}`);
    }
  });
  afterAll(async () => {
    await service?.close();
    await store?.dispose();
  });

  it('trustProxy counts the last X-Forwarded-For entry, whatever the caller put before it', async () => {
    expect(await register({ trustProxy: true }, { 'x-forwarded-for': `203.0.113.99, ${BURST}` })).toBe(429);
    expect(await register({ trustProxy: true }, { 'x-forwarded-for': BURST })).toBe(429);
    expect(await register({ trustProxy: true }, { 'x-forwarded-for': `${BURST}, 198.51.100.8` })).toBe(201);
  });

  it('trustProxy reads X-Real-IP when there is no X-Forwarded-For', async () => {
    expect(await register({ trustProxy: true }, { 'x-real-ip': BURST })).toBe(429);
    expect(await register({ trustProxy: true }, { 'x-real-ip': '198.51.100.9' })).toBe(201);
  });

  it('behind several proxies, SERVICE_TRUSTED_PROXIES picks the entry that many hops from the end', async () => {
    // The limiter counts in the store, so this second service sees the budget spent above.
    const twoProxies = await serviceOn({ SERVICE_TRUSTED_PROXIES: '2' });
    try {
      const through = (forwarded: string) =>
        register({ trustProxy: true }, { 'x-forwarded-for': forwarded }, twoProxies);
      expect(await through(`203.0.113.1, ${BURST}, 10.0.0.2`)).toBe(429);
      expect(await through(`${BURST}, 198.51.100.11, 10.0.0.2`)).toBe(201);
    } finally {
      await twoProxies.close();
    }
  });

  it('clientAddress reads the address the host’s way', async () => {
    const clientAddress = (request: Request) => request.headers.get('cf-connecting-ip');
    expect(await register({ clientAddress }, { 'cf-connecting-ip': BURST })).toBe(429);
    expect(await register({ clientAddress }, { 'cf-connecting-ip': '198.51.100.10' })).toBe(201);
  });

  it('hands the wire no address without an opt-in, or when the header is not an IP address', async () => {
    expect(await register({}, { 'x-forwarded-for': BURST, 'x-real-ip': BURST })).toBe(201);
    expect(await register({ trustProxy: true }, { 'x-forwarded-for': `${BURST}, not-an-address` })).toBe(201);
    expect(await register({ clientAddress: () => `${BURST}:4711` }, {})).toBe(201);
  });

  it('forwards CORS preflights to the door, at its endpoints and its discovery documents', async () => {
    const preflight = (url: string) =>
      new Request(url, {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
      });
    const { OPTIONS } = toNextHandlers(service);
    for (const path of ['/api/service/mcp', '/api/service/mcp/token', '/api/service/mcp/register']) {
      const response = await OPTIONS(preflight(`${ORIGIN}${path}`));
      expect(response.status, path).toBeLessThan(300);
      expect(response.headers.get('access-control-allow-origin'), path).not.toBeNull();
      expect(response.headers.get('access-control-allow-methods'), path).toContain('POST');
    }
    const wellKnown = toNextWellKnownHandler(service);
    const discovery = await wellKnown.OPTIONS(
      preflight(`${ORIGIN}/.well-known/oauth-authorization-server/api/service/mcp`),
    );
    expect(discovery.status).toBeLessThan(300);
    expect(discovery.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('refuses both options at once', () => {
    expect(() => toNextHandlers(service, { trustProxy: true, clientAddress: () => BURST })).toThrow(
      'pass trustProxy or clientAddress, not both',
    );
  });
});
