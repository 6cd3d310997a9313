/**
 * The example tool against a running platform: it starts from the balance and connections, and
 * follows the event stream.
 */

import { createClient } from '@service/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { appendEvents } from '../../../packages/core/src/events/log.js';
import { type FakeUpstream, startFakeUpstream } from '../../../packages/core/test/support/fake-upstream.js';
import {
  createMeteredTenant,
  type MeteredTenant,
  seedProviders,
} from '../../../packages/core/test/support/metered.js';
import { type RunningPlatform, startPlatform } from '../../../packages/core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../../packages/core/test/support/stores.js';
import { type DeployedTool, startDeployedTool } from '../src/tool.js';

let store: TestStore;
let upstream: FakeUpstream;
let running: RunningPlatform;
let tenant: MeteredTenant;
let tool: DeployedTool;

beforeAll(async () => {
  store = await openTestStore();
  upstream = await startFakeUpstream();
  running = await startPlatform(store);
  await seedProviders(running.platform, upstream.url);
  tenant = await createMeteredTenant(running.platform, 3_000_000);
  tool = await startDeployedTool(createClient({ apiKey: tenant.appKey, baseUrl: running.url }));
});
afterAll(async () => {
  await tool?.close();
  await running?.close();
  await upstream?.close();
  await store?.dispose();
});

const view = async () => (await fetch(`${tool.url}/`)).json();

it('starts from its balance and connections', async () => {
  expect(await view()).toEqual({
    balance_micros: 3_000_000,
    connections: [
      { slug: 'llm', status: 'connected' },
      { slug: 'search', status: 'connected' },
    ].sort((a, b) => a.slug.localeCompare(b.slug)),
    last_event: null,
  });
  expect((await fetch(`${tool.url}/healthz`)).status).toBe(200);
});

it('follows the event stream', async () => {
  await store.db
    .transaction()
    .execute((trx) =>
      appendEvents(trx, [
        { appId: tenant.appId, kind: 'billing.balance_changed', fields: { remaining_micros: 1_234 } },
      ]),
    );
  await expect.poll(async () => (await view()).balance_micros, { timeout: 10_000 }).toBe(1_234);
  expect((await view()).last_event).toMatchObject({ kind: 'billing.balance_changed' });
});
