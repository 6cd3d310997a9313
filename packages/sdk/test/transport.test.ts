/**
 * Retries, timeouts, idempotency keys and settings checks, against a loopback server that can fail
 * on demand (a healthy platform never answers 503 when asked to).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createClient,
  ServiceAuthError,
  ServiceConfigError,
  ServiceConnectionError,
  ServiceError,
  ServiceRateLimitError,
  ServiceUpstreamError,
} from '../src/index.js';
import { type LoopbackServer, startLoopbackServer } from './support/loopback-server.js';

const KEY = `service_sk_${'k'.repeat(43)}`;
const FAST = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };
const BALANCE = { credits_remaining_micros: 5, currency: 'USD', top_up_url: 'http://x/billing' };
let server: LoopbackServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.unstubAllEnvs();
});

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  [status, { 'content-type': 'application/json', ...headers }, JSON.stringify(body)] as const;

type Scripted = readonly [number, Record<string, string>, string] | 'drop' | 'hang' | 'stall';

async function serve(answers: Scripted[]) {
  server = await startLoopbackServer((req, res, index) => {
    const answer = answers[Math.min(index, answers.length - 1)]!;
    req.resume();
    if (answer === 'drop') return req.socket.destroy();
    if (answer === 'hang') return;
    // Headers and half a body, then nothing.
    if (answer === 'stall')
      return void res.writeHead(200, { 'content-type': 'application/json' }).write('{"credits_');
    res.writeHead(answer[0], answer[1]).end(answer[2]);
  });
  return server;
}

describe('retries', () => {
  it('retries a GET after 5xx answers and returns the success', async () => {
    const { url, requests } = await serve([json(503, {}), json(500, {}), json(200, BALANCE)]);
    const client = createClient({ apiKey: KEY, baseUrl: url, retry: FAST });
    expect(await client.balance()).toEqual(BALANCE);
    expect(requests).toHaveLength(3);
  });

  it('retries after a dropped connection', async () => {
    const { url, requests } = await serve(['drop', json(200, BALANCE)]);
    expect(await createClient({ apiKey: KEY, baseUrl: url, retry: FAST }).balance()).toEqual(BALANCE);
    expect(requests).toHaveLength(2);
  });

  it('gives up after the last attempt with the typed error of the last answer', async () => {
    const { url, requests } = await serve([
      json(502, { error: { code: 'upstream_error', message: 'down' } }),
    ]);
    const error = await createClient({ apiKey: KEY, baseUrl: url, retry: FAST })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceUpstreamError);
    expect(requests).toHaveLength(3);
  });

  it('never retries a 4xx', async () => {
    const { url, requests } = await serve([json(401, { error: { message: 'Invalid or revoked token' } })]);
    const error = await createClient({ apiKey: KEY, baseUrl: url, retry: FAST })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(requests).toHaveLength(1);
  });

  it('sends one Idempotency-Key with a POST and reuses it on every retry', async () => {
    const { url, requests } = await serve([json(503, {}), 'drop', json(201, { ok: true })]);
    const client = createClient({ apiKey: KEY, baseUrl: url, retry: FAST });
    expect(await client.request('/api/things', { method: 'POST', body: { a: 1 } })).toEqual({ ok: true });
    const keys = requests.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(requests[0]!.headers['content-type']).toBe('application/json');
  });

  it('uses the Idempotency-Key the caller gives', async () => {
    const { url, requests } = await serve([json(200, {})]);
    await createClient({ apiKey: KEY, baseUrl: url }).request('/x', {
      method: 'POST',
      idempotencyKey: 'order-42',
    });
    expect(requests[0]!.headers['idempotency-key']).toBe('order-42');
  });

  it('takes an Idempotency-Key given as a header, in any case, and sends exactly one', async () => {
    const { url, requests } = await serve([json(503, {}), json(200, {})]);
    await createClient({ apiKey: KEY, baseUrl: url, retry: FAST }).request('/x', {
      method: 'POST',
      body: {},
      headers: { 'Idempotency-Key': 'order-43', 'Content-Type': 'application/json; charset=utf-8' },
    });
    expect(requests.map((r) => r.headers['idempotency-key'])).toEqual(['order-43', 'order-43']);
    expect(requests[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it("always sends the client's own credential, whatever Authorization header the caller passes", async () => {
    const { url, requests } = await serve([json(200, {})]);
    await createClient({ apiKey: KEY, baseUrl: url }).request('/x', {
      headers: { Authorization: 'Bearer someone-else' },
    });
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('makes one attempt when retries are off', async () => {
    const { url, requests } = await serve([json(503, {})]);
    await createClient({ apiKey: KEY, baseUrl: url, retry: false })
      .balance()
      .catch(() => {});
    expect(requests).toHaveLength(1);
  });
});

describe('Retry-After', () => {
  /** Backoff alone would wait at most 20 ms; a second's `Retry-After` fits under the ceiling. */
  const PATIENT = { attempts: 3, baseDelayMs: 5, maxDelayMs: 3000 };

  /** Serves `answers` in turn, recording when each request came. */
  async function timed(answers: Array<readonly [number, Record<string, string>, string]>) {
    const at: number[] = [];
    await server?.close();
    server = await startLoopbackServer((req, res, index) => {
      at.push(performance.now());
      const answer = answers[Math.min(index, answers.length - 1)]!;
      req.resume();
      res.writeHead(answer[0], answer[1]).end(answer[2]);
    });
    return { ...server, at };
  }

  it("waits the seconds of a 503's Retry-After before retrying, not its own backoff", async () => {
    const { url, at } = await timed([json(503, {}, { 'retry-after': '1' }), json(200, BALANCE)]);
    const client = createClient({ apiKey: KEY, baseUrl: url, retry: PATIENT });
    expect(await client.balance()).toEqual(BALANCE);
    expect(at).toHaveLength(2);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
  });

  it('reads a Retry-After given as an HTTP date', async () => {
    const when = new Date(Date.now() + 2000).toUTCString();
    const { url, at } = await timed([json(503, {}, { 'retry-after': when }), json(200, BALANCE)]);
    const client = createClient({ apiKey: KEY, baseUrl: url, retry: PATIENT });
    expect(await client.balance()).toEqual(BALANCE);
    // The date has whole seconds: between one and two from now.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
  });

  it('retries a 429 after its Retry-After, and never one that does not say when', async () => {
    const limited = json(429, { error: { code: 'rate_limited', message: 'slow down' } });
    const { url, at } = await timed([
      [limited[0], { ...limited[1], 'retry-after': '1' }, limited[2]],
      json(200, BALANCE),
    ]);
    expect(await createClient({ apiKey: KEY, baseUrl: url, retry: PATIENT }).balance()).toEqual(BALANCE);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);

    const bare = await timed([limited, json(200, BALANCE)]);
    const error = await createClient({ apiKey: KEY, baseUrl: bare.url, retry: PATIENT })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceRateLimitError);
    expect(bare.at).toHaveLength(1);
  });

  it('throws at once, carrying retryAfter, when the wait asked for is past maxDelayMs', async () => {
    const { url, at } = await timed([json(503, {}, { 'retry-after': '120' }), json(200, BALANCE)]);
    const started = performance.now();
    const error = await createClient({ apiKey: KEY, baseUrl: url, retry: PATIENT })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 503, retryAfter: 120 });
    expect(at).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('does not wait for a stalled page of a 503 before retrying after its Retry-After', async () => {
    const at: number[] = [];
    server = await startLoopbackServer((req, res, index) => {
      at.push(performance.now());
      req.resume();
      // A load balancer's page: headers, a first chunk, then nothing.
      if (index === 0)
        return void res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '1' }).write('<html>');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(BALANCE));
    });
    const client = createClient({ apiKey: KEY, baseUrl: server.url, retry: PATIENT, timeoutMs: 10_000 });
    expect(await client.balance()).toEqual(BALANCE);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
    expect(at[1]! - at[0]!).toBeLessThan(5000);
  });

  it("ends the wait at once on the caller's abort", async () => {
    const { url, at } = await timed([json(503, {}, { 'retry-after': '5' }), json(200, BALANCE)]);
    const controller = new AbortController();
    const pending = createClient({
      apiKey: KEY,
      baseUrl: url,
      retry: { ...PATIENT, maxDelayMs: 10_000 },
    }).balance({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user gave up')), 100);
    const started = performance.now();
    await expect(pending).rejects.toThrow('user gave up');
    expect(performance.now() - started).toBeLessThan(1000);
    expect(at).toHaveLength(1);
  });
});

describe('timeouts and aborts', () => {
  it('times out each attempt and ends with a ServiceConnectionError', async () => {
    const { url, requests } = await serve(['hang']);
    const started = Date.now();
    const error = await createClient({
      apiKey: KEY,
      baseUrl: url,
      timeoutMs: 100,
      retry: { ...FAST, attempts: 2 },
    })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceConnectionError);
    expect(error.code).toBe('timeout');
    expect(requests).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('times out a body that stalls after the headers, and retries it', async () => {
    const { url, requests } = await serve(['stall', json(200, BALANCE)]);
    const client = createClient({ apiKey: KEY, baseUrl: url, timeoutMs: 200, retry: FAST });
    expect(await client.balance()).toEqual(BALANCE);
    expect(requests).toHaveLength(2);
  });

  it('ends with a timeout when every body stalls', async () => {
    const { url, requests } = await serve(['stall']);
    const started = Date.now();
    const client = createClient({
      apiKey: KEY,
      baseUrl: url,
      timeoutMs: 100,
      retry: { ...FAST, attempts: 2 },
    });
    const error = (await client.request('/x').catch((e) => e)) as ServiceConnectionError;
    expect(error).toBeInstanceOf(ServiceConnectionError);
    expect(error.code).toBe('timeout');
    expect(requests).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('takes Infinity, or a timeout longer than a timer holds, as no timeout', async () => {
    const [status, headers, body] = json(200, BALANCE);
    server = await startLoopbackServer((req, res) => {
      req.resume();
      setTimeout(() => res.writeHead(status, headers).end(body), 50);
    });
    for (const timeoutMs of [Infinity, 2 ** 31, 1e12]) {
      const client = createClient({ apiKey: KEY, baseUrl: server.url, timeoutMs, retry: false });
      expect(await client.balance(), String(timeoutMs)).toEqual(BALANCE);
    }
  });

  it("ends at once on the caller's abort, without retrying", async () => {
    const { url, requests } = await serve(['hang']);
    const controller = new AbortController();
    const pending = createClient({ apiKey: KEY, baseUrl: url, retry: FAST }).balance({
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('user gave up')), 50);
    await expect(pending).rejects.toThrow('user gave up');
    expect(requests).toHaveLength(1);
  });

  it("bounds a proxy call by the caller's signal, not the client's timeout, and never retries it", async () => {
    const { url, requests } = await serve(['hang']);
    const client = createClient({ apiKey: KEY, baseUrl: url, timeoutMs: 20, retry: FAST });
    const pending = client.proxy.fetch('llm-gateway', '/v1/chat/completions', {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(300),
    });
    // Past the client's 20 ms timeout, the call still waits on the provider.
    const early = await Promise.race([
      pending.then(
        () => 'settled',
        () => 'settled',
      ),
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 150)),
    ]);
    expect(early).toBe('waiting');
    const error = await pending.catch((e) => e);
    expect(error.name).toBe('TimeoutError');
    expect(requests).toHaveLength(1);
  });

  it('reports an unreachable platform as a network error', async () => {
    const { url } = await serve([json(200, {})]);
    await server!.close();
    server = undefined;
    const error = await createClient({ apiKey: KEY, baseUrl: url, retry: FAST })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceConnectionError);
    expect(error.code).toBe('network_error');
  });
});

describe('settings', () => {
  it('rejects with a typed error before any request when no key is given or set', async () => {
    vi.stubEnv('SERVICE_API_KEY', '');
    const fetch = vi.fn(globalThis.fetch);
    const client = createClient({ baseUrl: 'http://127.0.0.1:9', fetch });
    const error = await client.balance().catch((e) => e);
    expect(error).toBeInstanceOf(ServiceConfigError);
    expect(error.code).toBe('missing_api_key');
    await expect(client.connections.list()).rejects.toBeInstanceOf(ServiceConfigError);
    await expect(client.events.subscribe().next()).rejects.toBeInstanceOf(ServiceConfigError);
    expect(fetch).not.toHaveBeenCalled();
  });

  it('refuses an empty apiKey or baseUrl at once instead of falling back to the environment', () => {
    vi.stubEnv('SERVICE_API_KEY', KEY);
    vi.stubEnv('SERVICE_BASE_URL', 'http://127.0.0.1:9');
    for (const options of [{ apiKey: '' }, { apiKey: '  ' }, { baseUrl: '' }]) {
      let error: unknown;
      try {
        createClient(options);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(options)).toBeInstanceOf(ServiceConfigError);
      expect((error as ServiceConfigError).code).toBe('invalid_option');
      expect((error as Error).message).toMatch(/^(apiKey|baseUrl) is empty/);
    }
  });

  it('refuses a base URL that is not an http(s) URL before any request, instead of retrying it as unreachable', async () => {
    // Written without its scheme, the usual slip: fetch fails on it as if the platform were down.
    const fetch = vi.fn(globalThis.fetch);
    for (const baseUrl of [
      'localhost:8787',
      '127.0.0.1:8787',
      'platform.example.com',
      'ftp://platform.example',
    ]) {
      const client = createClient({ apiKey: KEY, baseUrl, fetch });
      for (const call of [
        () => client.balance(),
        () => client.proxy.fetch('llm-gateway', '/v1/models'),
        () => client.events.subscribe().next(),
      ]) {
        const error = await call().catch((e) => e);
        expect(error, baseUrl).toBeInstanceOf(ServiceConfigError);
        expect(error.code).toBe('invalid_option');
        expect(error.message).toContain('is not an http:// or https:// URL');
      }
      vi.stubEnv('SERVICE_BASE_URL', baseUrl);
      const fromEnv = await createClient({ apiKey: KEY, fetch })
        .balance()
        .catch((e) => e);
      expect(fromEnv).toBeInstanceOf(ServiceConfigError);
      expect(fromEnv.message).toBe(
        `The base URL "${baseUrl}" (baseUrl, or SERVICE_BASE_URL) is not an http:// or https:// URL: write it whole, such as https://platform.example.com`,
      );
    }
    expect(fetch).not.toHaveBeenCalled();
    // In a browser, fetch reads a relative base URL against the page: so does the check.
    vi.stubGlobal('location', { href: 'https://shop.example.com/app/' });
    try {
      const browserFetch = vi.fn(
        async (_input: RequestInfo | URL, _init?: RequestInit) =>
          new Response(JSON.stringify(BALANCE), { headers: { 'content-type': 'application/json' } }),
      );
      const client = createClient({ apiKey: KEY, baseUrl: '/platform', fetch: browserFetch });
      expect(await client.balance()).toEqual(BALANCE);
      expect(browserFetch.mock.calls[0]?.[0]).toBe('/platform/api/billing/balance');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('falls back to SERVICE_API_KEY and SERVICE_BASE_URL, keeping a path prefix', async () => {
    const { url, requests } = await serve([json(200, BALANCE)]);
    vi.stubEnv('SERVICE_API_KEY', KEY);
    vi.stubEnv('SERVICE_BASE_URL', `${url}/prefix/`);
    expect(await createClient().balance()).toEqual(BALANCE);
    expect(requests[0]!.url).toBe('/prefix/api/billing/balance');
    expect(requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('refuses an answer that does not match the server schema', async () => {
    const { url } = await serve([json(200, { credits_remaining_micros: 'lots' })]);
    const error = await createClient({ apiKey: KEY, baseUrl: url })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe('invalid_response');
  });

  it('refuses a credential, lastEventId or header that HTTP cannot carry, before any request', async () => {
    const fetch = vi.fn(globalThis.fetch);
    const base = { baseUrl: 'http://127.0.0.1:9', fetch, retry: FAST, reconnect: { maxAttempts: 2 } };
    const expectConfigError = async (what: string, call: () => Promise<unknown>) => {
      const error = (await call().catch((e) => e)) as ServiceConfigError;
      expect(error, what).toBeInstanceOf(ServiceConfigError);
      expect(error.code, what).toBe('invalid_option');
      return error;
    };
    for (const apiKey of [`${KEY}\u2019`, `${KEY}\nX-Other: 1`, `${KEY} ${KEY}`]) {
      const client = createClient({ ...base, apiKey });
      const error = await expectConfigError(apiKey, () => client.balance());
      expect(error.message).not.toContain(KEY);
      await expectConfigError(apiKey, () => client.events.subscribe().next());
      await expectConfigError(apiKey, () => client.proxy.fetch('search', '/q'));
    }
    vi.stubEnv('SERVICE_API_KEY', `${KEY}\r\n`.repeat(2));
    await expectConfigError('env', () => createClient({ baseUrl: base.baseUrl, fetch }).balance());
    const client = createClient({ ...base, apiKey: KEY });
    expect(() => client.forUser('eyJ.eyJ.sig\u2019')).toThrow(ServiceConfigError);
    const position = await expectConfigError('lastEventId', () =>
      client.events.subscribe({ lastEventId: '57\n68' }).next(),
    );
    expect(position.message).toContain('lastEventId');
    expect(position.message).not.toContain('57');
    const header = await expectConfigError('header', () =>
      client.request('/x', { headers: { 'x-token': 'secret\nvalue' } }),
    );
    expect(header.message).toContain('"x-token"');
    expect(header.message).not.toContain('secret');
    await expectConfigError('idempotencyKey', () =>
      client.request('/x', { method: 'POST', idempotencyKey: 'order\u2019' }),
    );
    await expectConfigError('proxy header', () =>
      client.proxy.fetch('search', '/q', { headers: { 'x-a': '\u2019' } }),
    );
    expect(fetch).not.toHaveBeenCalled();
  });

  it('refuses a method or a GET body fetch cannot send, before any request, instead of a network error', async () => {
    const fetch = vi.fn(globalThis.fetch);
    const client = createClient({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9', fetch, retry: FAST });
    const calls: Array<[string, () => Promise<unknown>, string]> = [
      [
        'request with a body, no method',
        () => client.request('/x', { body: { a: 1 } }),
        'A GET request cannot carry a body',
      ],
      [
        'proxy with a body, no method',
        () => client.proxy.fetch('llm-gateway', '/v1/chat/completions', { body: '{}' }),
        'A GET request cannot carry a body',
      ],
      [
        'proxy HEAD with a body',
        () => client.proxy.fetch('search', '/q', { method: 'head', body: 'x' }),
        'A HEAD request cannot carry a body',
      ],
      [
        'request bad method',
        () => client.request('/x', { method: 'GET /admin' }),
        'The method "GET /ADMIN" is not one fetch can send',
      ],
      [
        'proxy bad method',
        () => client.proxy.fetch('search', '/q', { method: 'CONNECT' }),
        'The method "CONNECT" is not one fetch can send',
      ],
    ];
    for (const [what, call, message] of calls) {
      const error = (await call().catch((e) => e)) as ServiceConfigError;
      expect(error, what).toBeInstanceOf(ServiceConfigError);
      expect(error.code, what).toBe('invalid_option');
      expect(error.message, what).toContain(message);
    }
    expect(fetch).not.toHaveBeenCalled();
  });

  it('refuses a proxy path that leads out of the provider, before any request', async () => {
    const { url, requests } = await serve([json(200, {})]);
    const client = createClient({ apiKey: KEY, baseUrl: `${url}/prefix` });
    for (const path of [
      '/../../api/deployments/me/connections',
      '%2e%2e/%2E%2E/api/deployments/me/connections',
      '..\\..\\api/billing/balance',
      '/v1/../../web-search-2/x',
      '..',
    ]) {
      const error = await client.proxy.fetch('web-search', path).catch((e) => e);
      expect(error, path).toBeInstanceOf(ServiceConfigError);
      expect(error.code).toBe('invalid_option');
    }
    expect(requests).toHaveLength(0);
    // A `..` that stays under the provider is the URL fetch would send anyway.
    await client.proxy.fetch('web-search', '/v1/old/../search?q=a');
    expect(requests.map((r) => r.url)).toEqual(['/prefix/proxy/web-search/v1/search?q=a']);
  });

  it('refuses a non-positive timeout and an empty forUser token', () => {
    for (const timeoutMs of [0, -1, Number.NaN]) {
      expect(() => createClient({ timeoutMs })).toThrow(ServiceConfigError);
      expect(() => createClient({ reconnect: { idleTimeoutMs: timeoutMs } })).toThrow(ServiceConfigError);
      expect(() => createClient({ reconnect: { headersTimeoutMs: timeoutMs } })).toThrow(ServiceConfigError);
    }
    expect(() => createClient({ apiKey: KEY }).forUser(' ')).toThrow(ServiceConfigError);
  });

  it("says so when forUser is handed the whole Authorization header, 'Bearer' and all", () => {
    const client = createClient({ apiKey: KEY });
    for (const header of ['Bearer aaa.bbb.ccc', 'bearer  aaa.bbb.ccc']) {
      expect(() => client.forUser(header)).toThrow(
        "forUser takes the identity JWT itself, not an Authorization header: leave out the 'Bearer ' in front",
      );
    }
  });

  it('refuses retry and reconnect numbers out of range at once, instead of reading them as 1', () => {
    const refused = (options: Parameters<typeof createClient>[0], message: RegExp) => {
      const error = (() => {
        try {
          createClient({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9', ...options });
        } catch (e) {
          return e;
        }
      })() as ServiceConfigError;
      expect(error, JSON.stringify(options)).toBeInstanceOf(ServiceConfigError);
      expect(error.code).toBe('invalid_option');
      expect(error.message).toMatch(message);
    };
    // 0 too: a call always makes its first attempt; `retry: false` (or 1) is "no retries".
    for (const attempts of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3' as unknown as number]) {
      refused({ retry: { attempts } }, /^retry\.attempts must be a whole number of attempts, 1 or more/);
    }
    for (const maxAttempts of [0, -1, 1.5, Number.NaN]) {
      refused(
        { reconnect: { maxAttempts } },
        /^reconnect\.maxAttempts must be a whole number .*Infinity never gives up/,
      );
    }
    for (const delay of [-1, Number.NaN]) {
      refused(
        { retry: { baseDelayMs: delay } },
        /^retry\.baseDelayMs must be a number of milliseconds, 0 or more/,
      );
      refused({ retry: { maxDelayMs: delay } }, /^retry\.maxDelayMs must be/);
      refused({ reconnect: { baseDelayMs: delay } }, /^reconnect\.baseDelayMs must be/);
      refused({ reconnect: { maxDelayMs: delay } }, /^reconnect\.maxDelayMs must be/);
    }
    refused({ retry: { baseDelayMs: Number.POSITIVE_INFINITY } }, /^retry\.baseDelayMs must be/);
    refused({ retry: 3 as unknown as false }, /^retry must be an object of options/);
    refused({ reconnect: 'fast' as unknown as object }, /^reconnect must be an object of options/);
    // A fetch that is not one would fail every attempt, retried as if the platform were down.
    refused({ fetch: 'node-fetch' as unknown as typeof fetch }, /^fetch must be a function/);
    // In range: 1 attempt, no reconnect ceiling, a stream that never gives up, an option left undefined.
    expect(() =>
      createClient({
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: Number.POSITIVE_INFINITY },
        reconnect: { maxAttempts: Number.POSITIVE_INFINITY, baseDelayMs: undefined },
      }),
    ).not.toThrow();
  });

  it("says which URL answered a 404 not in the platform's shape, and that the base URL may be wrong", async () => {
    // Another server at the base URL (or the platform without its path prefix): its own 404 page.
    const { url } = await serve([
      [404, { 'content-type': 'text/html' }, '<pre>Cannot GET /api/billing/balance</pre>'],
    ]);
    const error = await createClient({ apiKey: KEY, baseUrl: url })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
    expect(error.message).toBe(
      `HTTP 404 from ${url}/api/billing/balance, not in the platform's error shape: the base URL (baseUrl, or SERVICE_BASE_URL) may be wrong, or miss its path prefix`,
    );
    // The platform's own 404 keeps its message.
    await server!.close();
    const platform = await serve([json(404, { error: { code: 'not_found', message: 'No such app' } })]);
    const own = await createClient({ apiKey: KEY, baseUrl: platform.url })
      .request('/api/apps/x')
      .catch((e: Error) => e);
    expect((own as Error).message).toBe('No such app');
  });
});
