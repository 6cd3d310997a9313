/**
 * `client.events.subscribe()`: the real platform stopped mid-stream and restarted (every missed
 * event delivered exactly once), and the stream's failure modes on a loopback server that
 * produces them on demand.
 */
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { appendEvents } from '../../core/src/events/log.js';
import { silentLogger } from '../../core/src/http/logger.js';
import { createPlatform } from '../../core/src/platform/create-platform.js';
import {
  createClient,
  ServiceAuthError,
  ServiceConfigError,
  ServiceConnectionError,
  ServiceError,
  type ServiceEvent,
  ServiceRateLimitError,
  ServiceValidationError,
} from '../src/index.js';
import { type LoopbackServer, startLoopbackServer } from './support/loopback-server.js';
import { createTenantFixture, openTestStore } from './support/platform.js';

const KEY = `service_sk_${'k'.repeat(43)}`;
const FAST = { baseDelayMs: 20, maxDelayMs: 200, idleTimeoutMs: 5_000 };
let server: LoopbackServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Takes `count` events from an iterator, failing after `ms`. */
async function take(
  iterator: AsyncIterator<ServiceEvent>,
  count: number,
  ms = 15_000,
): Promise<ServiceEvent[]> {
  const events: ServiceEvent[] = [];
  const deadline = Date.now() + ms;
  while (events.length < count) {
    const left = deadline - Date.now();
    const next = await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`only ${events.length} events`)), left),
      ),
    ]);
    if (next.done) break;
    events.push(next.value);
  }
  return events;
}

const block = (id: number, kind: string, fields: Record<string, unknown>) =>
  `id: ${id}\nevent: ${kind}\ndata: ${JSON.stringify({ id: String(id), at: '2030-01-01T00:00:00.000Z', kind, ...fields })}\n\n`;
const connected = (id: number) => block(id, 'connection.connected', { slug: 'github', connection_id: 'c1' });
const alias = (id: number) =>
  `id: ${id}\nevent: connection_created\ndata: ${JSON.stringify({ id: String(id), at: '2030-01-01T00:00:00.000Z', kind: 'connection.connected', slug: 'github', connection_id: 'c1' })}\n\n`;
const balance = (id: number) => block(id, 'billing.balance_changed', { remaining_micros: 1000 - id });

function openStream(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** Appends a `billing.balance_changed` event for `appId` to the store's event log. */
const emitBalance = (store: Awaited<ReturnType<typeof openTestStore>>, appId: string, remaining: number) =>
  store.db
    .transaction()
    .execute((trx) =>
      appendEvents(trx, [
        { appId, kind: 'billing.balance_changed', fields: { remaining_micros: remaining } },
      ]),
    );

describe('against the running platform', () => {
  it('delivers every event it missed while the server was down, exactly once, after a restart', async () => {
    const store = await openTestStore();
    let platform = await createPlatform({ store, env: {}, logger: silentLogger });
    const start = (port: number) =>
      new Promise<ReturnType<typeof serve>>((resolve) => {
        const s = serve({ fetch: platform.fetch, port, hostname: '127.0.0.1' }, () => resolve(s));
      });
    const stop = (s: ReturnType<typeof serve>) =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in s) s.closeAllConnections();
        s.close(() => resolve());
      });
    let http = await start(0);
    const port = (http.address() as AddressInfo).port;
    const tenant = await createTenantFixture(platform);
    const emit = (remaining: number) => emitBalance(store, tenant.appId, remaining);
    const controller = new AbortController();
    let answered!: () => void;
    const opened = new Promise<void>((resolve) => {
      answered = resolve;
    });
    const client = createClient({
      apiKey: tenant.appKey,
      baseUrl: `http://127.0.0.1:${port}`,
      reconnect: FAST,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        answered();
        return response;
      },
    });
    const iterator = client.events.subscribe({ signal: controller.signal });
    try {
      const first = iterator.next();
      // The stream is open once the server has answered (not after a guessed delay, which a
      // busy machine outlasts); events from then on are live.
      await opened;
      await emit(1);
      await emit(2);
      const before = [(await first).value as ServiceEvent, ...(await take(iterator, 1))];

      await stop(http);
      await emit(3);
      await emit(4);
      // A new process: a new platform over the same database, on the same port.
      platform = await createPlatform({ store, env: {}, logger: silentLogger });
      http = await start(port);
      await emit(5);
      const after = await take(iterator, 3);

      const all = [...before, ...after];
      expect(all.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5']);
      expect(all.map((e) => (e.kind === 'billing.balance_changed' ? e.remaining_micros : null))).toEqual([
        1, 2, 3, 4, 5,
      ]);
    } finally {
      controller.abort();
      await iterator.return?.();
      await stop(http);
      await store.dispose();
    }
  });

  it('delivers the events made while it reconnects, though it had seen none before the drop', async () => {
    const store = await openTestStore();
    const platform = await createPlatform({ store, env: {}, logger: silentLogger });
    const tenant = await createTenantFixture(platform);
    const emit = (remaining: number) => emitBalance(store, tenant.appId, remaining);
    await emit(0);
    let streams = 0;
    const controller = new AbortController();
    const client = createClient({
      apiKey: tenant.appKey,
      baseUrl: 'http://platform.test',
      // The first stream is cut after a while; the reconnect comes after events were made.
      fetch: async (input, init) => {
        const response = await platform.fetch(new Request(input, init));
        if (++streams > 1 || !response.body) return response;
        const reader = response.body.getReader();
        const cut = new ReadableStream<Uint8Array>({
          async start(stream) {
            const first = await reader.read();
            if (!first.done) stream.enqueue(first.value);
            await new Promise((resolve) => setTimeout(resolve, 200));
            await emit(1);
            await emit(2);
            await reader.cancel();
            stream.error(new Error('connection reset'));
          },
        });
        return new Response(cut, { status: response.status, headers: response.headers });
      },
      reconnect: FAST,
    });
    const iterator = client.events.subscribe({ signal: controller.signal });
    try {
      const events = await take(iterator, 2);
      expect(streams).toBe(2);
      expect(events.map((e) => e.id)).toEqual(['2', '3']);
    } finally {
      controller.abort();
      await iterator.return?.();
      await platform.close();
      await store.dispose();
    }
  });
});

describe('a stopping platform', () => {
  it('closes in under 3 s with an SDK stream open: the stream is ended and its reconnects refused', async () => {
    const store = await openTestStore();
    const platform = await createPlatform({ store, env: {}, logger: silentLogger });
    const http = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: platform.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const tenant = await createTenantFixture(platform);
    const controller = new AbortController();
    const statuses: number[] = [];
    const client = createClient({
      apiKey: tenant.appKey,
      baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
      // Reconnects at once when the stream ends: the worst case for a stopping server.
      reconnect: { baseDelayMs: 1, maxDelayMs: 1, idleTimeoutMs: 60_000 },
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        return response;
      },
    });
    const iterating = take(client.events.subscribe({ signal: controller.signal }), 1, 20_000).catch(
      (error: unknown) => error,
    );
    try {
      await expect.poll(() => statuses, { timeout: 5_000 }).toEqual([200]);
      // The platform drains while its server still listens (a load balancer still routing to it),
      // then the server closes, sweeping idle sockets as examples/platform does.
      const started = Date.now();
      await platform.close();
      await expect.poll(() => statuses.length, { timeout: 2_500 }).toBeGreaterThanOrEqual(2);
      const sweep = setInterval(() => {
        if ('closeIdleConnections' in http) http.closeIdleConnections();
      }, 50);
      const closed = await Promise.race([
        new Promise<boolean>((resolve) => http.close(() => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3_000 - (Date.now() - started))),
      ]);
      clearInterval(sweep);
      const tookMs = Date.now() - started;
      console.info(`platform and server closed in ${tookMs} ms with an SDK stream open`);
      expect(statuses[1]).toBe(503);
      expect(closed).toBe(true);
      expect(tookMs).toBeLessThan(3_000);
    } finally {
      controller.abort();
      await iterating;
      if ('closeAllConnections' in http) http.closeAllConnections();
      await store.dispose();
    }
  });
});

describe('giving up and reporting', () => {
  it('gives up on a server that never answers with its headers, reporting each retry', async () => {
    server = await startLoopbackServer(() => {
      // Holds the request: no status line, no headers.
    });
    const retries: Array<{ error: Error; attempt: number }> = [];
    const started = Date.now();
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, headersTimeoutMs: 200, maxAttempts: 3 },
    }).events.subscribe({ onError: (error, retry) => retries.push({ error, attempt: retry.attempt }) });
    const error = await iterator.next().catch((e) => e);
    expect(error).toBeInstanceOf(ServiceConnectionError);
    expect(error.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(server.requests).toHaveLength(3);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expect(retries[0]!.error).toBeInstanceOf(ServiceConnectionError);
  });

  it('gives up on a server whose error answer stalls after its headers, within the timeouts', async () => {
    server = await startLoopbackServer((_req, res) => {
      // A 503's status line and headers, the start of its body, then nothing.
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': '200' });
      res.write('{"message":');
    });
    const retries: number[] = [];
    const started = Date.now();
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, headersTimeoutMs: 200, idleTimeoutMs: 200, maxAttempts: 3 },
    }).events.subscribe({ onError: (_error, retry) => retries.push(retry.attempt) });
    const error = await Promise.race([
      iterator.next().catch((e) => e),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5_000)),
    ]);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(server.requests).toHaveLength(3);
    expect(retries).toEqual([1, 2]);
  });

  it('gives up on an unreachable host after maxAttempts with a network_error', async () => {
    const closed = await startLoopbackServer(() => {});
    const url = closed.url;
    await closed.close();
    const delays: number[] = [];
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: url,
      reconnect: { ...FAST, maxAttempts: 4 },
    }).events.subscribe({
      onError: (_error, retry) => delays.push(retry.delayMs),
    });
    const error = await iterator.next().catch((e) => e);
    expect(error).toBeInstanceOf(ServiceConnectionError);
    expect(error.code).toBe('network_error');
    expect(delays).toHaveLength(3);
  });

  it('gives up on endless 429s with the typed error, after waiting Retry-After each time', async () => {
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(JSON.stringify({ error: { message: 'Rate limit exceeded' } }));
    });
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, maxAttempts: 3 },
    }).events.subscribe();
    await expect(iterator.next()).rejects.toBeInstanceOf(ServiceRateLimitError);
    expect(server.requests).toHaveLength(3);
  });

  it('gives up at once on a 404 (a wrong base URL) with its typed error', async () => {
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Not found' }));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe();
    const error = await iterator.next().catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests).toHaveLength(1);
  });

  it("names the URL that answered a 404 not in the platform's shape, and the base URL as the likely cause", async () => {
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe();
    const error = await iterator.next().catch((e) => e);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
    expect(error.message).toMatch(
      new RegExp(`^HTTP 404 from ${server.url}/api/deployments/me/events, .*the base URL .* may be wrong`),
    );
  });

  it('refuses kinds that are not an array of event kinds, and callbacks that are not functions, before any request', async () => {
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(500).end();
    });
    const client = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST });
    for (const [options, message] of [
      [{ kinds: 'connection.changed' }, /^kinds must be an array of event kinds/],
      [{ kinds: 'x' }, /^kinds must be an array of event kinds/],
      [{ kinds: [] }, /^kinds is empty/],
      [
        { kinds: ['connection.chnged'] },
        /^kinds has "connection.chnged", not an event kind: one of connection\.connected, /,
      ],
      [{ onError: 'log' }, /^onError must be a function/],
    ] as const) {
      const error = await client.events
        .subscribe(options as never)
        .next()
        .catch((e) => e);
      expect(error, JSON.stringify(options)).toBeInstanceOf(ServiceConfigError);
      expect(error.message).toMatch(message);
    }
    expect(server.requests).toHaveLength(0);
  });

  it("calls onReconnect with the id it resumes after, and waits the server's retry hint", async () => {
    const times: number[] = [];
    server = await startLoopbackServer((_req, res, index) => {
      times.push(Date.now());
      openStream(res);
      if (index === 0) res.end(`${balance(1)}retry: 400\n\n`);
      else res.write(balance(2));
    });
    const reconnects: Array<string | undefined> = [];
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe({
      onReconnect: ({ lastEventId }) => reconnects.push(lastEventId),
    });
    expect((await take(iterator, 2)).map((e) => e.id)).toEqual(['1', '2']);
    await iterator.return?.();
    expect(reconnects).toEqual(['1']);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(380);
  });
});

describe('stream handling', () => {
  it('delivers each canonical event once: alias blocks, repeats, pings and unknown kinds are dropped', async () => {
    server = await startLoopbackServer((_req, res) => {
      openStream(res);
      res.write(': ping\n\n');
      res.write(connected(1) + alias(1));
      res.write(connected(1));
      res.write(block(2, 'something.new', {}));
      res.write('id: 3\nevent: billing.balance_changed\ndata: {not json\n\n');
      res.write(balance(4));
    });
    const client = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST });
    const iterator = client.events.subscribe();
    const events = await take(iterator, 2);
    await iterator.return?.();
    expect(events).toEqual([
      {
        id: '1',
        at: '2030-01-01T00:00:00.000Z',
        kind: 'connection.connected',
        slug: 'github',
        connection_id: 'c1',
      },
      { id: '4', at: '2030-01-01T00:00:00.000Z', kind: 'billing.balance_changed', remaining_micros: 996 },
    ]);
    expect(server.requests[0]!.headers).toMatchObject({
      accept: 'text/event-stream',
      authorization: `Bearer ${KEY}`,
    });
    expect(server.requests[0]!.headers['last-event-id']).toBeUndefined();
  });

  it('tells onMissed when a replay starts past the id it sent, and only then', async () => {
    server = await startLoopbackServer((req, res, index) => {
      // The first answer replays all; the second was cut to the events the server still keeps.
      const sent = Number(req.headers['last-event-id']);
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'service-last-event-id': String(index === 0 ? sent : 150),
      });
      res.flushHeaders();
      if (index === 0) res.end(balance(sent + 1));
      else res.write(balance(151));
    });
    const missed: Array<{ after: string; resumedAfter: string }> = [];
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe({
      lastEventId: '10',
      onMissed: (info) => missed.push(info),
    });
    expect((await take(iterator, 2)).map((e) => e.id)).toEqual(['11', '151']);
    await iterator.return?.();
    expect(server.requests.map((r) => r.headers['last-event-id'])).toEqual(['10', '11']);
    expect(missed).toEqual([{ after: '11', resumedAfter: '150' }]);
  });

  it('delivers the new events of a log restored from a backup, whose ids it has seen before', async () => {
    server = await startLoopbackServer((_req, res, index) => {
      // Before the restore the log reached 12; restored, its newest is 10, and 11 and 12 are new events.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'service-last-event-id': '10' });
      res.flushHeaders();
      if (index === 0) res.end(balance(11) + balance(12));
      else res.write(block(11, 'billing.balance_changed', { remaining_micros: 7 }) + balance(13));
    });
    const missed: unknown[] = [];
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe({
      lastEventId: '10',
      onMissed: (info) => missed.push(info),
    });
    const events = await take(iterator, 4);
    await iterator.return?.();
    expect(events.map((e) => [e.id, (e as { remaining_micros: number }).remaining_micros])).toEqual([
      ['11', 989],
      ['12', 988],
      ['11', 7],
      ['13', 987],
    ]);
    expect(server.requests.map((r) => r.headers['last-event-id'])).toEqual(['10', '12']);
    expect(missed).toEqual([]);
  });

  it('reconnects when the server ends the stream, resending Last-Event-ID', async () => {
    server = await startLoopbackServer((req, res, index) => {
      openStream(res);
      if (index === 0) {
        res.end(connected(7) + alias(7));
        return;
      }
      // A replay from after the id the client sent.
      const after = Number(req.headers['last-event-id']);
      res.write(balance(after + 1));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe({
      lastEventId: '6',
    });
    const events = await take(iterator, 2);
    await iterator.return?.();
    expect(events.map((e) => e.id)).toEqual(['7', '8']);
    expect(server.requests.map((r) => r.headers['last-event-id'])).toEqual(['6', '7']);
  });

  it('only delivers the kinds asked for', async () => {
    server = await startLoopbackServer((_req, res) => {
      openStream(res);
      res.write(connected(1) + balance(2) + connected(3));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url }).events.subscribe({
      kinds: ['connection.connected'],
    });
    const events = await take(iterator, 2);
    await iterator.return?.();
    expect(events.map((e) => e.id)).toEqual(['1', '3']);
  });

  it('stops with a ServiceAuthError on 401 and on 403, without retrying', async () => {
    for (const status of [401, 403]) {
      const stream = await startLoopbackServer((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'Missing or invalid Bearer token' } }));
      });
      const iterator = createClient({ apiKey: KEY, baseUrl: stream.url, reconnect: FAST }).events.subscribe();
      const error = await iterator.next().catch((e) => e);
      expect(error).toBeInstanceOf(ServiceAuthError);
      expect(error.status).toBe(status);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(stream.requests).toHaveLength(1);
      await stream.close();
    }
  });

  it('stops with the typed error of another 4xx', async () => {
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json', 'service-error-code': 'validation_failed' });
      res.end(JSON.stringify({ error: { code: 'validation_failed', message: 'Bad Last-Event-ID' } }));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url }).events.subscribe();
    await expect(iterator.next()).rejects.toBeInstanceOf(ServiceValidationError);
  });

  it('stops with an invalid_response error when a 200 answer is not an event stream', async () => {
    // A base URL pointing at some other web server: retrying it forever would only hide that.
    server = await startLoopbackServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p>Welcome</p>');
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe();
    const error = await take(iterator, 1, 2_000).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 200, code: 'invalid_response' });
    expect(error.message).toContain('text/html');
    expect(server.requests).toHaveLength(1);
  });

  it('waits retry_after on 429 before connecting again', async () => {
    const times: number[] = [];
    server = await startLoopbackServer((_req, res, index) => {
      times.push(Date.now());
      if (index === 0) {
        res.writeHead(429, {
          'content-type': 'application/json',
          'service-error-code': 'rate_limit_sse_streams',
        });
        res.end(
          JSON.stringify({
            error: {
              code: 'rate_limit_sse_streams',
              message: 'Too many concurrent SSE streams',
              retry_after: 1,
            },
          }),
        );
        return;
      }
      openStream(res);
      res.write(balance(1));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe();
    const [event] = await take(iterator, 1);
    await iterator.return?.();
    expect(event?.id).toBe('1');
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(950);
  });

  it('retries 5xx answers and dropped connections with backoff', async () => {
    server = await startLoopbackServer((req, res, index) => {
      if (index === 0) return res.writeHead(503).end();
      if (index === 1) return req.socket.destroy();
      openStream(res);
      res.write(balance(1));
    });
    const iterator = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST }).events.subscribe();
    expect((await take(iterator, 1))[0]?.id).toBe('1');
    await iterator.return?.();
    expect(server.requests).toHaveLength(3);
  });

  it('reports a stream that breaks off mid-answer as a network_error ServiceConnectionError', async () => {
    server = await startLoopbackServer((req, res) => {
      openStream(res);
      res.write(': ping\n\n');
      // A reset mid-stream: the runtime's own error ("terminated") is the cause, not the error.
      setTimeout(() => req.socket.destroy(), 20);
    });
    const errors: unknown[] = [];
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, maxAttempts: 2 },
    }).events.subscribe({ onError: (error) => errors.push(error) });
    const thrown = await take(iterator, 1).catch((error: unknown) => error);
    for (const error of [...errors, thrown]) {
      expect(error).toBeInstanceOf(ServiceConnectionError);
      expect((error as ServiceConnectionError).code).toBe('network_error');
    }
    expect(errors).toHaveLength(1);
  });

  it('neither storms nor retries for ever a server that says "come back at once" and repeats what it sent', async () => {
    server = await startLoopbackServer((_req, res) => {
      openStream(res);
      res.end(`retry: 0\n\n${balance(1)}`);
    });
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, maxAttempts: 4 },
    }).events.subscribe();
    const started = Date.now();
    const outcome = await take(iterator, 2, 10_000).catch((error: unknown) => error);
    // The event once; then its repeats are no progress, so the attempts run out, each after a
    // wait of at least 250 ms where the server asked for none.
    expect(outcome).toBeInstanceOf(ServiceConnectionError);
    expect(server.requests.length).toBe(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 250 - 20);
  });

  it('backs off exponentially from a server that only pings and hangs up', async () => {
    const times: number[] = [];
    server = await startLoopbackServer((_req, res) => {
      times.push(Date.now());
      openStream(res);
      res.end(': ping\n\n');
    });
    const controller = new AbortController();
    const client = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST });
    const iterating = take(client.events.subscribe({ signal: controller.signal }), 1, 10_000);
    await expect.poll(() => times.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(6);
    controller.abort();
    expect(await iterating).toEqual([]);
    // The 5th retry waits at least half of min(200, 20 x 2^4) ms: the backoff was not reset by pings.
    expect(times[5]! - times[4]!).toBeGreaterThanOrEqual(95);
  });

  it('replaces a connection that stays silent past the idle timeout', async () => {
    server = await startLoopbackServer((_req, res, index) => {
      openStream(res);
      if (index === 1) res.write(balance(1));
    });
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, idleTimeoutMs: 200 },
    }).events.subscribe();
    expect((await take(iterator, 1))[0]?.id).toBe('1');
    await iterator.return?.();
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('takes Infinity for the header and idle timeouts as none: a slow server keeps its one connection', async () => {
    server = await startLoopbackServer((_req, res) => {
      setTimeout(() => {
        openStream(res);
        setTimeout(() => res.write(balance(1)), 100);
      }, 100);
    });
    const iterator = createClient({
      apiKey: KEY,
      baseUrl: server.url,
      reconnect: { ...FAST, idleTimeoutMs: Infinity, headersTimeoutMs: Infinity },
    }).events.subscribe();
    expect((await take(iterator, 1))[0]?.id).toBe('1');
    await iterator.return?.();
    expect(server.requests).toHaveLength(1);
  });

  it('ends cleanly on abort and closes the connection when the loop breaks', async () => {
    let closed = 0;
    server = await startLoopbackServer((req, res) => {
      req.on('close', () => closed++);
      openStream(res);
      res.write(balance(1));
    });
    const controller = new AbortController();
    const client = createClient({ apiKey: KEY, baseUrl: server.url, reconnect: FAST });
    const seen: string[] = [];
    for await (const event of client.events.subscribe({ signal: controller.signal })) {
      seen.push(event.id);
      controller.abort();
    }
    expect(seen).toEqual(['1']);
    for await (const _event of client.events.subscribe()) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toBe(2);
    expect(server.requests).toHaveLength(2);
  });
});
