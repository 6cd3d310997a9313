/**
 * Two instances of the runnable platform on one Postgres, as a deployment runs them: the demo's
 * metered providers answer on either instance, whichever booted last and whichever stops. (The
 * demo upstream is one fixed address that each instance answers from its own stand-in.)
 * Postgres only: the embedded store admits one process.
 *
 * @see examples/platform/README.md
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../packages/core/test/support/stores.js';
import { bootPlatform, freePort, type PlatformProcess } from './support/boot.js';

describe.runIf(STORE_KINDS.includes('postgres'))('two platform instances on one Postgres', () => {
  let cwd: string;
  let store: TestStore;
  const running: PlatformProcess[] = [];

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'svc-two-'));
    store = await openTestStore('postgres');
  });
  afterAll(async () => {
    for (const instance of running) await instance.stop();
    await store?.dispose();
    rmSync(cwd, { recursive: true, force: true });
  });

  const boot = async () => {
    const port = await freePort();
    const instance = await bootPlatform(cwd, { PORT: String(port), DATABASE_URL: store.url! });
    running.push(instance);
    return { instance, url: `http://127.0.0.1:${port}` };
  };

  it('answers demo calls on the first instance after the one that booted last has stopped', async () => {
    const first = await boot();
    const last = await boot();
    const { keys } = JSON.parse(readFileSync(join(cwd, '.service/demo.json'), 'utf8')) as {
      keys: { appKey: string };
    };
    const auth = { authorization: `Bearer ${keys.appKey}` };
    const chat = (url: string) =>
      fetch(`${url}/proxy/llm-gateway/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo-echo', messages: [{ role: 'user', content: 'hello' }] }),
      });

    const before = await chat(last.url);
    expect(before.status).toBe(200);
    await before.arrayBuffer();
    expect(await last.instance.stop()).toBe(0);

    const answer = await chat(first.url);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ choices: [{ message: { content: 'You said: hello' } }] });
    const search = await fetch(`${first.url}/proxy/web-search/search?q=demo`, { headers: auth });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ query: 'demo' });
    // The demo upstream is not a route of the platform's own server.
    expect((await fetch(`${first.url}/demo-upstream/search`)).status).toBe(404);
  }, 120_000);
});
