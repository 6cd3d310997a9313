/**
 * Webhooks behind a host body parser: `express.json()` mounted before the wire reads and
 * re-serializes the body, so a signature over the sender's bytes (pretty-printed JSON here)
 * cannot match. The adapter hands over the kept bytes when the host keeps them, and otherwise
 * the wire answers 500 `raw_body_unavailable` (never a misleading 401) and the adapter warns once.
 */
import { signWebhook } from '@service/core/wire';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Service } from '../../core/src/wire/create-service.js';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';
import { testService } from '../../core/test/wire/support/wire.js';
import { type ExpressServer, serveWithExpress } from './support/serve.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** Pretty-printed, as many senders write it: `JSON.stringify(JSON.parse(body))` differs. */
const BODY = '{\n  "action": "opened",\n  "number": 7\n}\n';

let store: TestStore;
let service: Service;
let server: ExpressServer | undefined;
beforeAll(async () => {
  store = await openTestStore();
  service = await testService(store, { automations: { webhooks: { github: SECRET } } });
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});
afterAll(async () => {
  await service?.close();
  await store?.dispose();
});

let sequence = 0;
function deliver(id = `msg_${++sequence}`): Promise<Response> {
  const at = Math.floor(Date.now() / 1000);
  return fetch(`${server!.url}/api/service/webhooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(at),
      'webhook-signature': signWebhook(SECRET, id, at, BODY),
    },
    body: BODY,
  });
}

/** A host route after the wire, to show the parser still serves the host. */
const echo = (app: express.Express) => app.post('/echo', (req, res) => res.json(req.body));

describe('webhooks through Express', () => {
  it('verifies a pretty-printed body when the wire is mounted before the parser', async () => {
    server = await serveWithExpress(service, { after: (app) => app.use(express.json()) });
    const response = await deliver();
    expect(response.status).toBe(202);
  });

  it('verifies behind express.json() when the host keeps the bytes in req.rawBody', async () => {
    server = await serveWithExpress(service, {
      before: (app) => {
        app.use(
          express.json({
            verify: (req, _res, buf) => {
              (req as { rawBody?: Buffer }).rawBody = buf;
            },
          }),
        );
        echo(app);
      },
    });
    const response = await deliver();
    expect(response.status).toBe(202);
    expect((await response.json()).accepted).toBe(true);
    const host = await fetch(`${server.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    });
    expect(await host.json()).toEqual({ action: 'opened', number: 7 });
  });

  it('verifies behind express.json() with withService, where Express never sees wire requests', async () => {
    server = await serveWithExpress(service, { fastPath: true, before: (app) => app.use(express.json()) });
    expect((await deliver()).status).toBe(202);
  });

  it('answers 500 raw_body_unavailable, not 401, when express.json() ran first and kept nothing, and warns once', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    server = await serveWithExpress(service, { before: (app) => app.use(express.json()) });
    const first = await deliver();
    expect(first.status).toBe(500);
    expect(first.headers.get('service-error-code')).toBe('raw_body_unavailable');
    const { error } = await first.json();
    expect(error.code).toBe('raw_body_unavailable');
    expect(error.message).toMatch(/before any body parser/);
    expect(error.message).toMatch(/verify/);
    expect((await deliver()).status).toBe(500);
    const said = warn.mock.calls.map((call) => String(call[0])).filter((m) => m.includes('@service/express'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/mountService\(app, service\) first/);
    expect(said[0]).toMatch(/req\.rawBody = buf/);
    // No rejection is recorded against the sender: the fault is the host's.
    const rejected = await store.db
      .selectFrom('wire_audit_events')
      .select('kind')
      .where('kind', '=', 'webhook.rejected')
      .execute();
    expect(rejected).toHaveLength(0);
  });

  it('still hands other wire routes the re-serialized JSON body', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    server = await serveWithExpress(service, { before: (app) => app.use(express.json()) });
    const response = await fetch(`${server.url}/api/service/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test-user': 'ada' },
      body: '{\n  "message": 5\n}',
    });
    // The wire read the body the parser left and judged its content.
    expect(response.status).toBe(400);
    expect((await response.json()).error.message).toMatch(/^body\.message/);
  });
});
