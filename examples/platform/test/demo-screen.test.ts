/**
 * The demo user's saved screen on a real demo host (loopback, in-memory store): seeded once per
 * demo file, so a deleted screen stays deleted on the next boot, and a demo file written anew
 * does not give a person who still has the screen a second one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { type RunningHost, startExpressHost } from '@service/example-express-host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import { seedDemoScreen } from '../src/demo-seed.js';

let store: Store;
let host: RunningHost;
let folder: string;
let demoFile: string;

beforeAll(async () => {
  store = await openMemoryStore();
  host = await startExpressHost({ store, logger: silentLogger, env: {} });
  folder = mkdtempSync(join(tmpdir(), 'svc-demo-screen-'));
  demoFile = join(folder, 'demo.json');
});
afterAll(async () => {
  await host?.close();
  await store?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** demo@example.com's apps and placements, over HTTP with the host's sign-in. */
async function demoUser() {
  const login = await fetch(`${host.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'demo@example.com' }),
  });
  const { token } = (await login.json()) as { token: string };
  const wire = async (method: string, path: string, body?: unknown) => {
    const answer = await fetch(`${host.url}/api/service${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(answer.status).toBe(200);
    return answer.json();
  };
  const { apps } = (await wire('GET', '/apps')) as { apps: Array<{ id: string; name: string }> };
  const { placements } = (await wire('GET', '/apps/placements')) as {
    placements: Array<{ slot: string; appId: string }>;
  };
  return { apps, placements, wire };
}

const recorded = () => JSON.parse(readFileSync(demoFile, 'utf8')).demoScreen;

describe('the demo screen seed', () => {
  it('seeds My orders in orders.side once, keeps the rest of the demo file, and never brings a deleted one back', async () => {
    writeFileSync(demoFile, `${JSON.stringify({ tenantId: 'ten_demo' })}\n`);
    await seedDemoScreen(demoFile, host);
    const seeded = await demoUser();
    expect(seeded.apps.map((app) => app.name)).toEqual(['My orders']);
    expect(seeded.placements).toEqual([
      expect.objectContaining({ slot: 'orders.side', appId: seeded.apps[0]!.id }),
    ]);
    expect(JSON.parse(readFileSync(demoFile, 'utf8'))).toEqual({
      tenantId: 'ten_demo',
      demoScreen: { appId: seeded.apps[0]!.id },
    });

    await seeded.wire('DELETE', `/apps/${seeded.apps[0]!.id}`);
    await seedDemoScreen(demoFile, host);
    const afterDelete = await demoUser();
    expect(afterDelete.apps).toEqual([]);
    expect(afterDelete.placements).toEqual([]);
  });

  it('gives no second screen to a person who has one when the demo file is written anew', async () => {
    writeFileSync(demoFile, '{}\n');
    await seedDemoScreen(demoFile, host);
    const first = await demoUser();
    expect(first.apps.map((app) => app.name)).toEqual(['My orders']);

    writeFileSync(demoFile, '{}\n');
    await seedDemoScreen(demoFile, host);
    const again = await demoUser();
    expect(again.apps.map((app) => app.id)).toEqual([first.apps[0]!.id]);
    expect(recorded()).toEqual({ appId: first.apps[0]!.id });
  });
});
