/**
 * Status, doctor and sync routes, development and production, and the automation entry points
 * (tick and webhooks) that authenticate by their own means.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveWithExpress } from '../../../express/test/support/serve.js';
import { signWebhook } from '../../src/automations/webhooks.js';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { callerFor, collectingLogger, ORIGIN, readTurn, testService, textOf } from './support/wire.js';

let store: TestStore;
let development: Service;
let production: Service;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const tools = [
  { name: 'lookup', description: 'Looks up', input: z.object({}), risk: 'read' as const, execute: () => 1 },
  { name: 'save', description: 'Saves', input: z.object({}), risk: 'write' as const, execute: () => 1 },
  {
    name: 'purge',
    description: 'Purges',
    input: z.object({}),
    risk: 'destructive' as const,
    execute: () => 1,
  },
  { name: 'misc', description: 'Ungraded', input: z.object({}), execute: () => 1 },
];

beforeAll(async () => {
  store = await openTestStore();
  development = await testService(store, {
    development: true,
    model: scriptedModel([{ text: ['x'] }]).model,
    tools,
    actAs: async () => ({ headers: {} }),
    automations: { webhooks: { github: SECRET } },
  });
  production = await testService(store, {
    development: false,
    env: { SERVICE_BASE_URL: 'https://host.example' },
  });
});
afterAll(async () => {
  await development?.close();
  await production?.close();
  await store?.dispose();
});

const anonymous = (service: Service) => callerFor(service.fetch, null);

describe('status', () => {
  it('reports every block of the status contract, in development without asking who is calling', async () => {
    const response = await anonymous(development)('/status');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.json();
    expect(Object.keys(body.blocks).sort()).toEqual(
      [
        'actions',
        'agent',
        'apps',
        'automations',
        'connections',
        'guard',
        'mcp',
        'model',
        'orgs',
        'sandbox',
        'store',
      ].sort(),
    );
    expect(body.blocks).toMatchObject({
      store: { ok: true, kind: 'pglite' },
      agent: { ready: true, toolOutputCap: 32000, historyWindow: null },
      actions: { tools: 4, read: 1, write: 1, destructive: 1, ungraded: 1, actAs: true },
      apps: true,
      automations: { tick: false, scheduler: false, webhookSources: 1 },
      orgs: false,
      sandbox: false,
      model: 'custom',
      mcp: false,
      connections: false,
    });
    const prod = await (await callerFor(production.fetch, 'ada')('/status')).json();
    expect(prod.blocks).toMatchObject({
      model: 'ladder',
      agent: { ready: false },
      actions: { actAs: false },
    });
  });

  it('asks for a signed-in user outside development', async () => {
    const response = await anonymous(production)('/status');
    expect(response.status).toBe(403);
    const body = await response.json();
    expect(body.error.code).toBe('principal_required');
    expect(body).not.toHaveProperty('blocks');
    const signedIn = await callerFor(production.fetch, 'ada')('/status');
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get('cache-control')).toBe('no-store');
  });
});

describe('development routes', () => {
  it('answer in development without a principal', async () => {
    const present = await anonymous(development)('/doctor/present', {
      method: 'POST',
      json: {},
      headers: { authorization: 'Bearer secret-token', cookie: 'a=b' },
    });
    expect(await present.json()).toEqual({ authorization: true, cookie: true, forwarding: false });
    const actAs = await anonymous(development)('/doctor/act-as', { method: 'POST', json: {} });
    expect(await actAs.json()).toEqual({ configured: true });
    const impact = await anonymous(development)('/sync/impact', {
      method: 'POST',
      json: { tools: ['purge', 'gone'] },
    });
    expect(await impact.json()).toEqual({
      tools: [
        { name: 'purge', known: true, apps: 0, automations: 0, grants: 0 },
        { name: 'gone', known: false, apps: 0, automations: 0, grants: 0 },
      ],
      totals: { apps: 0, automations: 0, grants: 0 },
    });
    // Its body is strict like every wire body: an unknown key, `__proto__` among them, is refused
    // (not ignored, which would report every tool).
    for (const body of ['{"tools":["purge"],"zzz":1}', '{"__proto__":{"x":1}}']) {
      const refused = await anonymous(development)('/sync/impact', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(refused.status, body).toBe(400);
      expect((await refused.json()).error.code, body).toBe('validation_failed');
    }
  });

  it('count the apps whose current version calls a tool, by query or by button', async () => {
    const apps = new AppStore(store.db);
    const button = (tool: string) => ({
      version: 1,
      title: 'Purge',
      root: { component: 'Button', props: { label: 'Purge', action: { type: 'tool', tool, input: {} } } },
    });
    const owner = `impact-${Date.now()}`;
    const purging = await apps.createApp(owner, {
      name: 'Purger',
      document: button('purge'),
      contentHash: 'h1',
    });
    await apps.createApp(owner, { name: 'Other', document: button('gone'), contentHash: 'h2' });
    const count = async () => {
      const impact = await anonymous(development)('/sync/impact', {
        method: 'POST',
        json: { tools: ['purge'] },
      });
      return (await impact.json()).tools[0].apps;
    };
    expect(await count()).toBe(1);
    // Only the current version counts: an edit that stops calling the tool takes the app out.
    await apps.addVersion(owner, purging.id, { document: button('gone'), contentHash: 'h3' });
    expect(await count()).toBe(0);
  });

  it('answer 404 in production, except /doctor/base-url, which reveals only whether the base URL is set', async () => {
    for (const path of ['/doctor/present', '/doctor/act-as', '/sync/impact']) {
      const response = await anonymous(production)(path, { method: 'POST', json: {} });
      expect(response.status).toBe(404);
      expect((await response.json()).error.code).toBe('route_not_found');
    }
    expect(await (await anonymous(production)('/doctor/base-url')).json()).toEqual({ set: true });
    expect(await (await anonymous(development)('/doctor/base-url')).json()).toEqual({ set: false });
  });
});

describe('webhooks', () => {
  const deliver = (body: string, headers: Record<string, string>) =>
    development.fetch(
      new Request(`${ORIGIN}/api/service/webhooks/github`, { method: 'POST', headers, body }),
    );
  const signed = (id: string, body: string, at = Math.floor(Date.now() / 1000)) => ({
    'webhook-id': id,
    'webhook-timestamp': String(at),
    'webhook-signature': signWebhook(SECRET, id, at, body),
    'content-type': 'application/json',
  });
  const rejections = async () =>
    (
      await store.db
        .selectFrom('wire_audit_events')
        .select('data')
        .where('kind', '=', 'webhook.rejected')
        .execute()
    ).map((r) => r.data.reason);

  it('accepts a signed delivery once and deduplicates its id', async () => {
    const body = '{"action":"opened"}';
    const first = await deliver(body, signed('msg_1', body));
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ accepted: true, duplicate: false, id: 'msg_1', runs: [] });
    const again = await deliver(body, signed('msg_1', body));
    expect(again.status).toBe(200);
    expect((await again.json()).duplicate).toBe(true);
  });

  it('refuses a bad signature, a stale timestamp and an unknown source with 401 and one audit event each', async () => {
    const body = '{"a":1}';
    const before = (await rejections()).length;
    const tampered = await deliver('{"a":2}', signed('msg_2', body));
    expect(tampered.status).toBe(401);
    expect((await tampered.json()).error.code).toBe('unauthorized');
    const stale = await deliver(body, signed('msg_3', body, Math.floor(Date.now() / 1000) - 301));
    expect(stale.status).toBe(401);
    const unknown = await development.fetch(
      new Request(`${ORIGIN}/api/service/webhooks/nobody`, {
        method: 'POST',
        headers: signed('msg_4', body),
        body,
      }),
    );
    expect(unknown.status).toBe(401);
    const reasons = (await rejections()).slice(before);
    expect(reasons).toEqual(['bad_signature', 'timestamp_out_of_window', 'unknown_source']);
  });

  it('refuses bodies over 1 MiB with 413', async () => {
    const body = 'x'.repeat(1024 * 1024 + 1);
    const response = await deliver(body, signed('msg_big', body));
    expect(response.status).toBe(413);
  });
});

describe('a request whose client drops before its body ends', () => {
  it('is not logged as the store being away: a JSON body, a chat message, an app import, a webhook delivery', async () => {
    const store = await openTestStore('pglite');
    const { logger, said: warnings } = collectingLogger();
    const service = await testService(store, { logger, automations: { webhooks: { hooks: SECRET } } });
    const server = await serveWithExpress(service);
    try {
      for (const path of [
        '/automations',
        '/approvals/decide',
        '/webhooks/hooks',
        '/chat',
        '/apps/import',
        '/slots',
      ]) {
        await new Promise<void>((resolve) => {
          const req = httpRequest(new URL(`${server.url}/api/service${path}`), {
            method: 'POST',
            headers: { 'x-test-user': 'ada', 'content-type': 'application/json', 'content-length': '100' },
          });
          req.on('error', () => resolve());
          req.on('close', () => resolve());
          req.write('{"name":', () => setTimeout(() => req.destroy(), 100));
        });
      }
      // The server has had the drops well before a request sent after them is answered.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await callerFor((r) => server.fetch(r), 'ada')('/automations')).status).toBe(200);
      expect(warnings).toEqual([]);
    } finally {
      await server.close();
      await service.close();
      await store.dispose();
    }
  });
});

describe('tick', () => {
  it('refuses every tick when no secret is configured', async () => {
    const response = await anonymous(development)('/tick', {
      method: 'POST',
      headers: { authorization: 'Bearer anything-at-all-123' },
    });
    expect(response.status).toBe(401);
  });
});

describe('present-mode credentials', () => {
  const echo = {
    name: 'whoami_upstream',
    description: 'Calls the host API as the user',
    input: z.object({}),
    risk: 'read' as const,
    execute: (_input: unknown, context: { credentials?: { headers: Record<string, string> } }) => ({
      forwarded: context.credentials?.headers ?? null,
    }),
  };
  const steps = [{ toolCalls: [{ id: 'p', name: 'whoami_upstream', input: {} }] }, { text: ['ok'] }];

  it('hands tools the user’s authorization and cookie when SERVICE_BASE_URL is set', async () => {
    const service = await testService(store, {
      model: scriptedModel(steps).model,
      tools: [echo],
      env: { SERVICE_BASE_URL: 'https://host.example' },
    });
    try {
      const response = await callerFor(service.fetch, 'pam')('/chat', {
        method: 'POST',
        json: { message: 'who am I upstream?' },
        headers: { authorization: 'Bearer user-token', cookie: 'sid=abc' },
      });
      const turn = await readTurn(response);
      const part = turn.message?.parts.find((p) => p.type === 'tool-whoami_upstream') as { output: unknown };
      expect(part.output).toEqual({ forwarded: { authorization: 'Bearer user-token', cookie: 'sid=abc' } });
    } finally {
      await service.close();
    }
  });

  it('forwards nothing without SERVICE_BASE_URL, and records that once per boot', async () => {
    const before = await store.db
      .selectFrom('wire_audit_events')
      .select('id')
      .where('kind', '=', 'present-credentials-not-forwarded')
      .execute();
    const service = await testService(store, { model: scriptedModel(steps).model, tools: [echo] });
    try {
      const turn = await readTurn(
        await callerFor(service.fetch, 'quin')('/chat', {
          method: 'POST',
          json: { message: 'who?' },
          headers: { cookie: 'sid=abc' },
        }),
      );
      const part = turn.message?.parts.find((p) => p.type === 'tool-whoami_upstream') as { output: unknown };
      expect(part.output).toEqual({ forwarded: null });
    } finally {
      await service.close();
    }
    const after = await store.db
      .selectFrom('wire_audit_events')
      .select(['data'])
      .where('kind', '=', 'present-credentials-not-forwarded')
      .execute();
    expect(after.length - before.length).toBe(1);
    expect(after.at(-1)?.data).toEqual({ reason: 'untrusted-host-origin' });
  });
});

describe('composition switches', () => {
  it('unmounts the apps, automations and runs routes when switched off', async () => {
    const off = await testService(store, {
      apps: false,
      automations: false,
      model: scriptedModel([{ text: ['still here'] }]).model,
    });
    try {
      const call = callerFor(off.fetch, 'rex');
      // Turns do not lean on the runs routes: one streams whole without them.
      const turn = await call('/chat', { method: 'POST', json: { message: 'hi' } });
      expect(textOf((await readTurn(turn)).message)).toBe('still here');
      const runId = turn.headers.get('x-service-run-id');
      for (const [path, init] of [
        ['/apps/app_1', {}],
        [
          '/apps/import',
          { method: 'POST', headers: { 'content-type': 'application/vnd.service.app+json' }, body: '{}' },
        ],
        ['/tick', { method: 'POST', headers: { authorization: 'Bearer whatever-secret-123' } }],
        ['/webhooks/github', { method: 'POST', body: '{}' }],
        ['/runs', {}],
        [`/runs/${runId}`, {}],
        [`/runs/${runId}/stop`, { method: 'POST', json: {} }],
      ] as const) {
        const response = await call(path, init);
        expect(response.status).toBe(404);
        expect((await response.json()).error.code).toBe('route_not_found');
      }
      const status = await (await call('/status')).json();
      expect(status.blocks).toMatchObject({ apps: false, automations: false });
    } finally {
      await off.close();
    }
  });

  it('mounts the runs routes with the automations', async () => {
    const on = await testService(store, { model: scriptedModel([{ text: ['ok'] }]).model });
    try {
      const call = callerFor(on.fetch, 'rex');
      const turn = await call('/chat', { method: 'POST', json: { message: 'hi' } });
      await readTurn(turn);
      const runId = turn.headers.get('x-service-run-id');
      expect((await call('/runs')).status).toBe(200);
      expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('completed');
      expect((await call(`/runs/${runId}/stop`, { method: 'POST', json: {} })).status).toBe(202);
      expect((await (await call('/status')).json()).blocks.automations).toEqual({
        tick: false,
        scheduler: false,
        webhookSources: 0,
      });
    } finally {
      await on.close();
    }
  });

  it('passes maxOutputTokens and the system prompt to every model step', async () => {
    const scripted = scriptedModel([{ text: ['ok'] }]);
    const service = await testService(store, {
      model: scripted.model,
      maxOutputTokens: 123,
      system: 'Be brief.',
    });
    try {
      await readTurn(
        await callerFor(service.fetch, 'sid')('/chat', { method: 'POST', json: { message: 'hi' } }),
      );
      expect(scripted.calls[0]!.maxOutputTokens).toBe(123);
      expect(scripted.calls[0]!.prompt[0]).toEqual({ role: 'system', content: 'Be brief.' });
    } finally {
      await service.close();
    }
  });
});
