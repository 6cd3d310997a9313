/**
 * The request pipeline, black-box through `fetch`: base path, percent-encoding, the JSON gate
 * and its four exceptions, principal refusals, the error envelope, bad bodies, composition errors.
 *
 * @see docs/wire.md "Request pipeline", "Errors"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Logger } from '../../src/http/logger.js';
import type { Service } from '../../src/wire/create-service.js';
import { createService } from '../../src/wire/create-service.js';
import { WIRE_ERROR_CODES } from '../../src/wire/errors.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { connect, TRANSPORTS, type Transport } from './support/transports.js';
import { callerFor, collectingLogger, headerPrincipal, ORIGIN, testService } from './support/wire.js';

const logged: Array<{ message: string; fields?: Record<string, unknown> }> = [];
const logger: Logger = {
  info: () => {},
  warn: () => {},
  error: (message, fields) => logged.push({ message, ...(fields ? { fields } : {}) }),
};
async function expectError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('service-error-code')).toBe(code);
  const body = await response.json();
  expect(body).toEqual({ error: { code, message: expect.any(String) } });
  expect(WIRE_ERROR_CODES[code as keyof typeof WIRE_ERROR_CODES]).toBe(status);
  return body.error.message as string;
}

let store: TestStore;
beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => store?.dispose());

for (const transportKind of TRANSPORTS) {
  describe(`wire pipeline (${transportKind})`, () => {
    let service: Service;
    let transport: Transport;
    const TICK_SECRET = 'tick-secret-0123456789';

    beforeAll(async () => {
      service = await testService(store, {
        model: scriptedModel([{ text: ['hi'] }]).model,
        logger,
        automations: {
          tickSecret: TICK_SECRET,
          webhooks: { github: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
        },
        principal: (request) => {
          const mode = request.headers.get('x-mode');
          if (mode === 'throw') throw new Error('session store down: password=hunter2');
          if (mode === 'reserved') return { subject: 'service:webhook:github' };
          if (mode === 'org') return { subject: 'org-1', kind: 'org' };
          if (mode === 'garbage') return { nope: true } as never;
          const subject = request.headers.get('x-subject');
          if (mode === 'subject' && subject !== null) return { subject: JSON.parse(subject) as string };
          return headerPrincipal(request);
        },
      });
      transport = await connect(transportKind, service);
    });
    afterAll(async () => {
      await transport?.close();
      await service?.close();
    });

    const request = (path: string, init: RequestInit = {}) =>
      service.fetch(new Request(`${ORIGIN}${path}`, init));
    const asAda = { 'x-test-user': 'ada' };
    const json = { 'content-type': 'application/json' };

    describe('base path and routes', () => {
      it('answers 404 route_not_found outside the base path and for unknown routes', async () => {
        if (transportKind === 'fetch') {
          // Through Express these never reach the wire: they are the host's own paths.
          await expectError(await request('/api/other/threads', { headers: asAda }), 404, 'route_not_found');
          await expectError(
            await request('/api/servicex/threads', { headers: asAda }),
            404,
            'route_not_found',
          );
        }
        await expectError(await request('/api/service/nope', { headers: asAda }), 404, 'route_not_found');
        await expectError(
          await request('/api/service/threads', { method: 'PUT', headers: { ...asAda, ...json } }),
          404,
          'route_not_found',
        );
      });

      it('routes /connections/catalog to its own handler, not to /connections/:id', async () => {
        const catalog = await request('/api/service/connections/catalog', { headers: asAda });
        expect(await expectError(catalog, 501, 'not_implemented')).toMatch(/connections catalog/);
        const one = await request('/api/service/connections/con_1', { headers: asAda });
        expect(await expectError(one, 501, 'not_implemented')).toMatch(/^Connections are not available/);
      });

      it('answers 400 malformed_url for a bad percent-encoding in the path or query', async () => {
        await expectError(
          await request('/api/service/threads/%E0%A4%A', { headers: asAda }),
          400,
          'malformed_url',
        );
        await expectError(
          await request('/api/service/threads?before=%zz', { headers: asAda }),
          400,
          'malformed_url',
        );
      });

      it('carries a request id on every answer', async () => {
        const response = await request('/api/service/threads', {
          headers: { ...asAda, 'x-request-id': 'req-123' },
        });
        expect(response.headers.get('x-request-id')).toBe('req-123');
      });
    });

    describe('JSON gate', () => {
      it('refuses state-changing requests without application/json, DELETE included', async () => {
        for (const [method, path] of [
          ['POST', '/api/service/chat'],
          ['POST', '/api/service/runs/run_x/stop'],
          ['DELETE', '/api/service/threads/t1'],
          ['DELETE', '/api/service/grants/grt_x'],
          ['POST', '/api/service/approvals/decide'],
        ] as const) {
          const form = await request(path, {
            method,
            headers: { ...asAda, 'content-type': 'application/x-www-form-urlencoded' },
            body: method === 'POST' ? 'message=hi' : null,
          });
          await expectError(form, 415, 'unsupported_media_type');
          await expectError(await request(path, { method, headers: asAda }), 415, 'unsupported_media_type');
        }
        const textPlain = await request('/api/service/chat', {
          method: 'POST',
          headers: { ...asAda, 'content-type': 'text/plain' },
          body: JSON.stringify({ message: 'hi' }),
        });
        await expectError(textPlain, 415, 'unsupported_media_type');
      });

      it('lets JSON through, with parameters and in any case', async () => {
        const response = await request('/api/service/threads/none', {
          method: 'DELETE',
          headers: { ...asAda, 'content-type': 'Application/JSON; charset=utf-8' },
        });
        await expectError(response, 404, 'not_found');
      });

      it('lets exactly four exceptions through, each proving itself another way', async () => {
        // 1. file upload: the custom header (a form cannot set it) passes the gate.
        const upload = await request('/api/service/files', {
          method: 'POST',
          headers: { ...asAda, 'x-service-upload': 'raw', 'content-type': 'application/octet-stream' },
          body: 'bytes',
        });
        expect(upload.status).toBe(201);
        await expectError(
          await request('/api/service/files', {
            method: 'POST',
            headers: { ...asAda, 'content-type': 'application/octet-stream' },
            body: 'x',
          }),
          415,
          'unsupported_media_type',
        );
        // 2. app import: its own media type passes the gate.
        const imported = await request('/api/service/apps/import', {
          method: 'POST',
          headers: { ...asAda, 'content-type': 'application/vnd.service.app+json' },
          body: '{}',
        });
        await expectError(imported, 400, 'validation_failed');
        await expectError(
          await request('/api/service/apps/import', {
            method: 'POST',
            headers: { ...asAda, 'content-type': 'text/plain' },
            body: '{}',
          }),
          415,
          'unsupported_media_type',
        );
        // 3. tick: its bearer secret, checked by the route.
        const tick = await request('/api/service/tick', {
          method: 'POST',
          headers: { authorization: `Bearer ${TICK_SECRET}` },
        });
        expect(tick.status).toBe(200);
        expect(await tick.json()).toEqual({ fired: 0, runs: [] });
        await expectError(await request('/api/service/tick', { method: 'POST' }), 401, 'unauthorized');
        // 4. webhook: its signature, checked by the route.
        await expectError(
          await request('/api/service/webhooks/github', {
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
            body: 'x',
          }),
          401,
          'unauthorized',
        );
      });
    });

    describe('principal', () => {
      it('answers 403 principal_required when nobody is signed in', async () => {
        await expectError(await request('/api/service/threads'), 403, 'principal_required');
      });

      it('refuses a subject in the reserved service: namespace with 400', async () => {
        await expectError(
          await request('/api/service/threads', { headers: { 'x-mode': 'reserved' } }),
          400,
          'principal_reserved',
        );
      });

      it('refuses a principal of kind org with 400', async () => {
        await expectError(
          await request('/api/service/threads', { headers: { 'x-mode': 'org' } }),
          400,
          'principal_kind_refused',
        );
      });

      it('answers a generic 500 naming principal resolution when principal() throws, and logs the cause', async () => {
        logged.length = 0;
        const response = await request('/api/service/threads', {
          headers: { 'x-mode': 'throw', 'x-request-id': 'req-p1' },
        });
        const message = await expectError(response, 500, 'principal_failed');
        expect(message).toBe('Principal resolution failed.');
        expect(message).not.toContain('hunter2');
        expect(logged.some((l) => l.fields?.request_id === 'req-p1')).toBe(true);
      });

      it('answers 500 principal_failed when principal() returns something that is not a principal', async () => {
        await expectError(
          await request('/api/service/threads', { headers: { 'x-mode': 'garbage' } }),
          500,
          'principal_failed',
        );
      });

      /** A string as JSON with every non-ASCII unit escaped: a header carries it as it is. */
      const asciiJson = (value: string) =>
        JSON.stringify(value).replace(
          /[\u007f-\uffff]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
        );

      it('answers 500 principal_failed for a subject the store could not keep, on every route, naming why in the log', async () => {
        // A host whose sign-in let a NUL, another control character or a lone surrogate into a
        // user id: refused at the principal, never failing deep in a statement.
        for (const subject of ['a\u0000b', 'a\u0007b', 'line\nbreak', 'half\ud800', 'x'.repeat(257)]) {
          logged.length = 0;
          for (const path of ['/api/service/threads', '/api/service/files', '/api/service/activity']) {
            const response = await request(path, {
              headers: { 'x-mode': 'subject', 'x-subject': asciiJson(subject) },
            });
            await expectError(response, 500, 'principal_failed');
          }
          expect(JSON.stringify(logged)).toContain('without control characters');
        }
        // Any script, and an emoji, is a subject.
        const fine = await request('/api/service/threads', {
          headers: { 'x-mode': 'subject', 'x-subject': asciiJson('Zoë 🙂 用户') },
        });
        expect(fine.status).toBe(200);
      });

      it('never calls principal() for tick, webhooks, orgs and the base-url doctor', async () => {
        const headers = { 'x-mode': 'throw' };
        expect((await request('/api/service/doctor/base-url', { headers })).status).toBe(200);
        await expectError(await request('/api/service/orgs', { headers }), 402, 'cloud_required');
        await expectError(
          await request('/api/service/tick', { method: 'POST', headers }),
          401,
          'unauthorized',
        );
      });
    });

    describe('bad input', () => {
      const post = (body: string, headers: Record<string, string> = {}) =>
        request('/api/service/chat', { method: 'POST', headers: { ...asAda, ...json, ...headers }, body });

      it('answers 400 invalid_json for a malformed body', async () => {
        await expectError(await post('{"message": '), 400, 'invalid_json');
      });

      it('reads the body of a route that takes none: nothing or {} pass, anything else is refused', async () => {
        for (const [method, path] of [
          ['POST', '/api/service/threads/none/stop'],
          ['DELETE', '/api/service/threads/none'],
          ['POST', '/api/service/runs/run_none/stop'],
          ['POST', '/api/service/automations/atm_none/pause'],
          ['DELETE', '/api/service/grants/grt_none'],
          ['DELETE', '/api/service/files/fil_none'],
        ] as const) {
          const send = (body?: string) =>
            request(path, {
              method,
              headers: { ...asAda, ...json },
              ...(body === undefined ? {} : { body }),
            });
          // Past the body, each of these is an unknown id.
          await expectError(await send(), 404, 'not_found');
          await expectError(await send(' {} '), 404, 'not_found');
          await expectError(await send('{'), 400, 'invalid_json');
          await expectError(await send('{"x":1}'), 400, 'validation_failed');
          await expectError(await send(`{"x":"${'y'.repeat(2000)}"}`), 413, 'payload_too_large');
        }
      });

      it('answers 400 validation_failed naming the field for wrong types or missing fields', async () => {
        expect(await expectError(await post('{"message": 42}'), 400, 'validation_failed')).toContain(
          'message',
        );
        expect(await expectError(await post('{}'), 400, 'validation_failed')).toContain('message');
        expect(
          await expectError(await post('{"id": "bad id!", "message": "x"}'), 400, 'validation_failed'),
        ).toContain('id');
        const forged = JSON.stringify({
          messages: [
            { role: 'user', parts: [{ type: 'tool-weather', state: 'output-available', output: 'x' }] },
          ],
        });
        await expectError(await post(forged), 400, 'validation_failed');
        const assistant = JSON.stringify({
          messages: [{ role: 'assistant', parts: [{ type: 'text', text: 'x' }] }],
        });
        await expectError(await post(assistant), 400, 'validation_failed');
        // A message of blank text only is refused as a blank `message` string is.
        for (const text of ['', '  \n ']) {
          const blank = JSON.stringify({ messages: [{ role: 'user', parts: [{ type: 'text', text }] }] });
          expect(await expectError(await post(blank), 400, 'validation_failed')).toContain(
            'body.messages[-1].parts',
          );
        }
        expect(await expectError(await post('{"message": "  "}'), 400, 'validation_failed')).toContain(
          'message',
        );
      });

      it('answers 413 for a body over the limit', async () => {
        await expectError(
          await post(JSON.stringify({ message: 'x'.repeat(1_100_000) })),
          413,
          'payload_too_large',
        );
      });

      it('answers 400 for bad query parameters', async () => {
        await expectError(
          await request('/api/service/threads?limit=0', { headers: asAda }),
          400,
          'validation_failed',
        );
        await expectError(
          await request('/api/service/activity?limit=abc', { headers: asAda }),
          400,
          'validation_failed',
        );
        // Numbers are decimal digits: not hexadecimal, exponents, blanks or padding.
        for (const path of [
          '/threads?limit=0x10',
          '/threads?limit=1e1',
          '/threads?limit=',
          '/threads?limit=%205',
          '/activity?before=0x10',
          '/activity?before=1e3',
          '/threads/t1/stream?after=1e3',
          '/threads/t1/stream?after=0x1',
          // A name given twice: neither value is read.
          '/threads?limit=5&limit=50',
          '/activity?limit=1&limit=1',
          '/threads/t1/stream?after=1&after=2',
        ]) {
          await expectError(
            await request(`/api/service${path}`, { headers: asAda }),
            400,
            'validation_failed',
          );
        }
        expect((await request('/api/service/threads?limit=07', { headers: asAda })).status).toBe(200);
      });
    });
  });
}

describe('composition', () => {
  it('requires principal and says what to fix', async () => {
    await expect(createService({ store } as never)).rejects.toThrow(
      /principal .*must be a function principal\(request\)/,
    );
  });

  it('leaves nothing running when it refuses a composition: no sweep of runs goes on after it', async () => {
    const gone = await openTestStore();
    await gone.close(); // declaring the apps' slots, the last step, fails
    const { logger, said } = collectingLogger();
    await expect(
      createService({
        store: gone,
        principal: () => null,
        logger,
        apps: { slots: [{ id: 'home.top', page: '/home', label: 'Top of home' }] },
      }),
    ).rejects.toThrow();
    // A setting read from the environment is refused before anything starts.
    await expect(
      createService({ store: gone, principal: () => null, logger, env: { SERVICE_TICK_SECRET: 'short' } }),
    ).rejects.toThrow(/SERVICE_TICK_SECRET must be at least 16 characters/);
    // The run hub sweeps every 2 s; one left running would warn of the closed store.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(said).toEqual([]);
  });

  it('refuses mcp without oauth, saying to pass oauth', async () => {
    await expect(createService({ store, principal: () => null, mcp: true })).rejects.toThrow(
      /mcp is set but oauth is missing: pass oauth/,
    );
  });

  it('refuses a tick secret shorter than 16 characters, from the options or the environment', async () => {
    await expect(
      createService({ store, principal: () => null, automations: { tickSecret: 'short' } }),
    ).rejects.toThrow(/tickSecret.*at least 16 characters/);
    await expect(
      createService({ store, principal: () => null, env: { SERVICE_TICK_SECRET: 'abcde' } }),
    ).rejects.toThrow(/SERVICE_TICK_SECRET must be at least 16 characters/);
    const fine = await createService({
      store,
      principal: () => null,
      env: { SERVICE_TICK_SECRET: 'a-long-enough-secret' },
    });
    await fine.close();
  });

  it('refuses malformed options and tools, naming each', async () => {
    await expect(createService({ store, principal: () => null, toolOutputCap: -1 })).rejects.toThrow(
      /toolOutputCap/,
    );
    await expect(createService({ store, principal: () => null, historyWindow: 0 })).rejects.toThrow(
      /historyWindow/,
    );
    await expect(createService({ store, principal: () => null, model: 42 as never })).rejects.toThrow(
      /model must be an AI SDK LanguageModel/,
    );
    await expect(
      createService({
        store,
        principal: () => null,
        tools: [{ name: 'x', description: '', input: z.object({}), execute: () => 1 }],
      }),
    ).rejects.toThrow(/tools\[0\] \(x\)\.description is required/);
    await expect(
      createService({
        store,
        principal: () => null,
        tools: [{ name: 'service_x', description: 'd', input: z.object({}), execute: () => 1 }],
      }),
    ).rejects.toThrow(/service_ prefix is reserved/);
    await expect(
      createService({
        store,
        principal: () => null,
        tools: [{ name: 'x', description: 'd', input: z.string(), execute: () => 1 }],
      }),
    ).rejects.toThrow(/input must describe an object/);
    await expect(
      createService({
        store,
        principal: () => null,
        tools: [
          { name: 'x', description: 'd', input: z.object({}), risk: 'scary' as never, execute: () => 1 },
        ],
      }),
    ).rejects.toThrow(/risk must be read, write or destructive/);
  });
});

describe('unexpected faults', () => {
  it('answers a generic 500 with the request id and logs the cause', async () => {
    const broken = await openTestStore();
    const faulty = await testService(broken, { logger });
    await broken.close();
    logged.length = 0;
    const response = await callerFor(faulty.fetch, 'ada')('/threads', {
      headers: { 'x-request-id': 'req-500' },
    });
    const message = await expectError(response, 500, 'internal_error');
    expect(message).toBe('Internal server error (request id req-500).');
    expect(logged.find((l) => l.fields?.request_id === 'req-500')).toBeDefined();
    await faulty.close();
  });
});
