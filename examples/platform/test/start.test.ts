/**
 * The runnable platform as a user meets it: boot on an empty embedded store, seed the demo,
 * answer the README's curl example, restart without crediting again, stop cleanly.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createStore, type Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itWithPrograms } from '../../../packages/core/test/support/programs.js';
import { checkDemoFile, demoFileOf } from '../src/demo-file.js';
import { readStartConfig } from '../src/start-config.js';
import { bootPlatform, freePort, type PlatformProcess, spawnPlatform } from './support/boot.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

let cwd: string;
let port: number;

/**
 * The platform running on `cwd` that the tests share. A boot takes seconds (up to a minute on a
 * busy 2-core machine), so a test that needs only a platform running on the demo folder uses the
 * one an earlier test left (`running`), and a test about a boot (a restart, a file or store
 * changed while stopped) stops it, cleanly (`stopShared`), and boots its own (`bootShared`), which
 * the tests after it share.
 */
let shared: PlatformProcess | undefined;

async function running(): Promise<PlatformProcess> {
  shared ??= await bootPlatform(cwd, { PORT: String(port) });
  return shared;
}

/** Stops the shared platform, if one runs: a clean stop, exit code 0. */
async function stopShared(): Promise<void> {
  const booted = shared;
  shared = undefined;
  if (booted) expect(await booted.stop(), booted.output().slice(-3000)).toBe(0);
}

async function bootShared(): Promise<PlatformProcess> {
  await stopShared();
  shared = await bootPlatform(cwd, { PORT: String(port) });
  return shared;
}

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'svc-start-'));
  port = await freePort();
});
afterAll(async () => {
  await stopShared();
  rmSync(cwd, { recursive: true, force: true });
});

/** Reads the data folder's store while no platform holds it. */
async function withDataStore<T>(read: (db: Store['db']) => Promise<T>): Promise<T> {
  const store = await createStore({ dataDir: join(cwd, '.service/data'), url: '' });
  try {
    return await read(store.db);
  } finally {
    await store.close();
  }
}

const demoFile = () => JSON.parse(readFileSync(join(cwd, '.service/demo.json'), 'utf8'));
const balance = async (key: string) =>
  (
    await fetch(`http://127.0.0.1:${port}/api/billing/balance`, {
      headers: { authorization: `Bearer ${key}` },
    })
  ).json();

/** The demo host's MCP door exchanging a service key for a token of the demo user: the status. */
const exchangeStatus = async (demo: { host: { mcp: { tokenUrl: string } } }, key: string) =>
  (
    await fetch(demo.host.mcp.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        client_id: 'service',
        client_secret: key,
        subject_token: 'user:demo@example.com',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      }),
    })
  ).status;

/** A dashboard session of the demo user, signed in through the development identity provider. */
async function demoSession(base: string): Promise<string> {
  const { access_token } = (await (
    await fetch(`${base}/auth/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'demo@example.com' }),
    })
  ).json()) as { access_token: string };
  const session = await fetch(`${base}/api/auth/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${access_token}` },
  });
  return session.headers.get('set-cookie')!.split(';')[0]!;
}

/** The curl line of the README's quick start, run as written (from the folder `pnpm start` ran in). */
function readmeCurl(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const line = readme.split('\n').find((l) => l.startsWith('curl ') && l.includes('/api/billing/balance'));
  if (!line) throw new Error('README has no curl example for /api/billing/balance');
  return line.replaceAll('localhost:8787', `localhost:${port}`);
}

/**
 * The demo catalog as anyone sees it: the public tools, one with a multi-step wizard; only the
 * example tool, whose release names something to run, is offered to deploy.
 */
async function expectSeededCatalog() {
  const base = `http://127.0.0.1:${port}`;
  const deployable = await (await fetch(`${base}/api/tools/deployable`)).json();
  // Neither the internal and test tools nor the listing-only ones.
  expect(deployable.tools.map((tool: { toolSlug: string }) => tool.toolSlug)).toEqual(['deployed-tool']);
  const detail = await (await fetch(`${base}/api/tools/research-desk`)).json();
  expect(detail.tool.release.wizardLayout.subSteps.map((step: { id: string }) => step.id)).toEqual([
    'connect',
    'voice',
    'configure',
  ]);
  expect(detail.tool.release.wizardInputs).toHaveLength(3);
  const catalog = await (await fetch(`${base}/api/tools/catalog`)).json();
  expect(catalog.tools.map((tool: { slug: string }) => tool.slug)).toEqual(
    expect.arrayContaining(['deployed-tool', 'research-desk', 'voice-notes']),
  );
  expect(catalog.tools).toContainEqual({
    slug: 'deployed-tool',
    name: 'Balance watcher',
    description: "Shows the workspace's credit and connections, live from the event stream.",
    category: 'operations',
  });
  const framing = await (await fetch(`${base}/api/tools/voice-notes/usage-framing`)).json();
  expect(framing.amounts.map((entry: { usd: number }) => entry.usd)).toEqual([5, 25, 100]);
  expect(framing.amounts[0].cold_start).toBe(true);
  const needs = await (await fetch(`${base}/api/tools/research-desk/integrations`)).json();
  expect(needs.required.map((entry: { provider: string }) => entry.provider)).toEqual([
    'llm-gateway',
    'web-search',
  ]);
  expect(needs.optional.map((entry: { provider: string }) => entry.provider)).toEqual(['speech']);
  // Every logo a deploy wizard shows resolves: the seed names none, the platform serves its own.
  for (const slug of ['deployed-tool', 'research-desk', 'voice-notes']) {
    const { required, optional } = await (await fetch(`${base}/api/tools/${slug}/integrations`)).json();
    for (const { logoUrl } of [...required, ...optional] as Array<{ logoUrl: string }>) {
      const logo = await fetch(logoUrl.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'));
      expect(logo.status, `${slug}: ${logoUrl}`).toBe(200);
      expect(logo.headers.get('content-type')).toContain('image/svg+xml');
    }
  }
}

// A test boots the platform (up to a minute on a busy 2-core machine) at most twice; the tests
// run in order, each on the demo folder as the ones before it left it.
describe('pnpm start', { timeout: 180_000 }, () => {
  it('boots on an empty store, seeds the demo and writes .service/demo.json with mode 0600', async () => {
    // Stopped cleanly (exit code 0) by the next test that boots its own.
    const booted = await bootShared();
    expect(booted.output()).toContain(join(cwd, '.service/demo.json'));
    expect(statSync(join(cwd, '.service/demo.json')).mode & 0o777).toBe(0o600);
    const demo = demoFile();
    expect(demo.store).toBe(`pglite:${join(cwd, '.service/data')}`);
    expect(booted.output()).toContain(`"demo_file":"${join(cwd, '.service/demo.json')}"`);
    expect(booted.output()).toContain('"store_runs":"thread"');
    expect(demo.keys.appKey).toMatch(/^service_sk_/);
    expect(await balance(demo.keys.appKey)).toMatchObject({
      credits_remaining_micros: 25_000_000,
      currency: 'USD',
    });
    expect(await balance(demo.keys.connectionKey)).toMatchObject({ credits_remaining_micros: 25_000_000 });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(booted.output()).toMatch(/"msg":"request".*"request_id"/);
    expect(booted.output()).not.toContain(demo.keys.appKey);
    expect(demo.host.mcp.serviceKey).toMatch(/^mcp_svc_/);
    expect(await exchangeStatus(demo, demo.host.mcp.serviceKey)).toBe(200);
    expect(booted.output()).not.toContain(demo.host.mcp.serviceKey);
    await expectSeededCatalog();
  });

  itWithPrograms(['curl'], "answers the README's balance curl line, run as written", async () => {
    // The first boot's platform: nothing spent yet.
    await running();
    const answer = JSON.parse(execFileSync('bash', ['-c', readmeCurl()], { cwd, encoding: 'utf8' }));
    expect(answer).toEqual({
      credits_remaining_micros: 25_000_000,
      currency: 'USD',
      top_up_url: `http://localhost:${port}/billing`,
    });
  });

  it('re-uses the seed on a second start and never credits again', async () => {
    await stopShared();
    const before = demoFile();
    await bootShared();
    expect(demoFile()).toEqual(before);
    expect(await balance(before.keys.appKey)).toMatchObject({ credits_remaining_micros: 25_000_000 });
    // The demo host's service key is kept too: the door of the new process accepts it.
    expect(await exchangeStatus(before, before.host.mcp.serviceKey)).toBe(200);
    // The catalog is upserted again, releases kept: the same list.
    await expectSeededCatalog();
  });

  it('re-issues the demo keys when the demo file is gone, revoking the old ones', async () => {
    await stopShared();
    const before = demoFile();
    rmSync(join(cwd, '.service/demo.json'));
    await bootShared();
    const after = demoFile();
    expect(after.keys.appKey).not.toBe(before.keys.appKey);
    expect(after.tenantId).toBe(before.tenantId);
    expect(await balance(after.keys.appKey)).toMatchObject({ credits_remaining_micros: 25_000_000 });
    expect(await balance(before.keys.appKey)).toEqual({ error: { message: 'Invalid or revoked token' } });
    expect(after.host.mcp.serviceKey).not.toBe(before.host.mcp.serviceKey);
    expect(await exchangeStatus(after, after.host.mcp.serviceKey)).toBe(200);
    expect(await exchangeStatus(after, before.host.mcp.serviceKey)).toBe(401);
  });

  it('runs no demo in production: no seeded workspace, no demo file, no demo host; blank values count as unset', async () => {
    const prodCwd = mkdtempSync(join(tmpdir(), 'svc-start-prod-'));
    const prodPort = await freePort();
    const hostPort = await freePort();
    const booted = await bootPlatform(
      prodCwd,
      {
        PORT: String(prodPort),
        SERVICE_DEMO_HOST_PORT: String(hostPort),
        NODE_ENV: 'production',
        // Never asked in this test: no identity token is presented.
        SERVICE_IDP_URL: 'http://127.0.0.1:9',
        SERVICE_STORE_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
        // Blank: the defaults, not every interface, an empty URL or the working folder.
        HOST: '',
        SERVICE_BASE_URL: ' ',
        SERVICE_DATA_DIR: '',
        SERVICE_SHUTDOWN_GRACE_MS: '',
      },
      '"msg":"listening"',
    );
    try {
      expect(booted.output()).toContain(`"address":"127.0.0.1:${prodPort}"`);
      expect(booted.output()).toContain(`"url":"http://localhost:${prodPort}"`);
      expect(booted.output()).toContain(`"store":"pglite:${join(prodCwd, '.service/data')}"`);
      expect(booted.output()).toContain('"demo":false');
      expect(booted.output()).not.toContain('Platform ready');
      expect((await fetch(`http://127.0.0.1:${prodPort}/healthz`)).status).toBe(200);
      expect(existsSync(join(prodCwd, '.service/demo.json'))).toBe(false);
      await expect(fetch(`http://127.0.0.1:${hostPort}/`)).rejects.toThrow();
    } finally {
      expect(await booted.stop()).toBe(0);
    }
    const store = await createStore({ dataDir: join(prodCwd, '.service/data'), url: '' });
    try {
      const tenants = await store.db.selectFrom('tenants').select('id').execute();
      expect(tenants).toEqual([]);
    } finally {
      await store.close();
      rmSync(prodCwd, { recursive: true, force: true });
    }
  });

  // The process's own settings are read first of all, by `readStartConfig`: each malformed one
  // is refused there, naming it. One of them, and a malformed store URL (refused by the store),
  // are run through a spawned process below, checking the boot stops before anything listens.
  it.each([
    ['PORT', 'abc', /PORT must be an integer from 0 to 65535/],
    ['SERVICE_SHUTDOWN_GRACE_MS', 'abc', /SERVICE_SHUTDOWN_GRACE_MS must be an integer from 0 to 600000/],
    ['SERVICE_DEMO_HOST_PORT', 'abc', /SERVICE_DEMO_HOST_PORT must be an integer from 0 to 65535/],
  ])('refuses a malformed %s in the start settings, naming it', (name, value, message) => {
    expect(() => readStartConfig({ PORT: '8787', [name]: value })).toThrow(message);
  });

  it.each([
    ['PORT', 'abc', /PORT must be an integer from 0 to 65535/],
    [
      'DATABASE_URL',
      'postgress://u:hunter2@db:5432/app',
      /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/,
    ],
  ])('stops the boot at a malformed %s, naming it, before anything listens', async (name, value, message) => {
    const badCwd = mkdtempSync(join(tmpdir(), 'svc-start-bad-'));
    const started = spawnPlatform(badCwd, { PORT: String(await freePort()), [name]: value });
    try {
      const code = await new Promise((resolve) => started.child.once('exit', resolve));
      expect(code).toBe(1);
      expect(started.output()).toMatch(/"msg":"startup failed"/);
      expect(started.output()).toMatch(message);
      expect(started.output()).not.toContain('hunter2');
      expect(started.output()).not.toContain('"msg":"listening"');
      // Nothing was written: the store never opened.
      expect(existsSync(join(badCwd, '.service/data'))).toBe(false);
    } finally {
      await started.stop();
      rmSync(badCwd, { recursive: true, force: true });
    }
  });

  it('refuses to start a second process on the same data folder', async () => {
    // The platform an earlier test booted holds the folder.
    await running();
    const second = spawnPlatform(cwd, { PORT: String(await freePort()) });
    const code = await new Promise((resolve) => second.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(second.output()).toMatch(/in use by process/);
  });

  it('stops as on SIGTERM once the package script that started it is gone, freeing the port and folder', async () => {
    await stopShared();
    const env = { PORT: String(port), npm_lifecycle_event: 'start' };
    const booted = await bootPlatform(cwd, env, 'Platform ready', { underShell: true });
    try {
      // The shell (and pnpm above it) ended outright: nothing passes a signal on to the platform.
      booted.child.kill('SIGKILL');
      const deadline = Date.now() + 20_000;
      while (!booted.output().includes('"msg":"stopped"') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(booted.output()).toContain('"signal":"parent exited"');
      expect(booted.output()).toContain('"msg":"stopped"');
    } finally {
      // Whatever the shell left in its process group (a platform that did not stop) goes.
      try {
        process.kill(-booted.child.pid!, 'SIGKILL');
      } catch {}
    }
    // The port and folder are free: the next boot has them (and the tests after this one share it).
    await bootShared();
  });

  it('refuses a port already taken as a startup failure, leaving the demo file as it was; on a port of its own, another data folder keeps a demo file of its own', async () => {
    await running();
    const before = readFileSync(join(cwd, '.service/demo.json'), 'utf8');
    // Another data folder (so the folder lock lets it through), the same port.
    const otherData = join(cwd, 'other-data');
    const second = spawnPlatform(cwd, { PORT: String(port), SERVICE_DATA_DIR: otherData });
    const code = await new Promise((resolve) => second.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(second.output()).toMatch(/startup failed.*EADDRINUSE/s);
    expect(readFileSync(join(cwd, '.service/demo.json'), 'utf8')).toBe(before);

    // On a free port it seeds that store, and its keys go beside it: the first store's file stays.
    const otherPort = await freePort();
    const other = await bootPlatform(cwd, { PORT: String(otherPort), SERVICE_DATA_DIR: otherData });
    try {
      expect(other.output()).toContain(`Demo keys and URLs: ${otherData}.demo.json (written now)`);
      expect(other.output()).toContain(`"demo_file":"${otherData}.demo.json"`);
      expect(readFileSync(join(cwd, '.service/demo.json'), 'utf8')).toBe(before);
      const otherDemo = JSON.parse(readFileSync(`${otherData}.demo.json`, 'utf8'));
      expect(otherDemo.store).toBe(`pglite:${otherData}`);
      expect(statSync(`${otherData}.demo.json`).mode & 0o777).toBe(0o600);
      // Each file's keys are its own store's.
      const otherBalance = await fetch(`http://127.0.0.1:${otherPort}/api/billing/balance`, {
        headers: { authorization: `Bearer ${otherDemo.keys.appKey}` },
      });
      expect(otherBalance.status).toBe(200);
      expect(await balance(otherDemo.keys.appKey)).toEqual({
        error: { message: 'Invalid or revoked token' },
      });
      expect(await balance(demoFile().keys.appKey)).toMatchObject({ currency: 'USD' });
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });

  it('frames the demo tool’s usage from its own spend once the demo app has made a metered call', async () => {
    // A platform that has not framed the demo tool's usage yet (none before this test asked).
    await running();
    const base = `http://127.0.0.1:${port}`;
    const framing = async () =>
      (await (await fetch(`${base}/api/tools/deployed-tool/usage-framing`)).json()).amounts;
    expect((await framing())[0].cold_start).toBe(true);
    const chat = await fetch(`${base}/proxy/llm-gateway/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demoFile().keys.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-echo', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(chat.status).toBe(200);
    await chat.arrayBuffer();
    // Each model is billed at the price its listing publishes.
    const appKey = demoFile().keys.appKey as string;
    const balanceNow = async () => (await balance(appKey)).credits_remaining_micros as number;
    const listed = (await (await fetch(`${base}/api/pricing/models`)).json()) as { models: unknown[] };
    for (const model of listed.models as Array<{
      id: string;
      pricing: { prompt_per_million: number; completion_per_million: number };
    }>) {
      const before = await balanceNow();
      const answer = await fetch(`${base}/proxy/llm-gateway/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: model.id,
          messages: [{ role: 'user', content: 'What is on the menu today?' }],
        }),
      });
      const { usage } = (await answer.json()) as {
        usage: { prompt_tokens: number; completion_tokens: number };
      };
      const published =
        usage.prompt_tokens * model.pricing.prompt_per_million +
        usage.completion_tokens * model.pricing.completion_per_million;
      expect(before - (await balanceNow()), model.id).toBe(Math.round(published));
    }
    // The framing is cached for an hour: the next boot reads the spend.
    await bootShared();
    const amounts = await framing();
    expect(amounts.map((entry: { cold_start: boolean }) => entry.cold_start)).toEqual([false, false, false]);
    expect(amounts[0].label).toMatch(/^About [\d,]+ calls$/);
  });

  it('walks docs/api/deploy.md: the demo user deploys the example tool, whose /search makes a metered call', async () => {
    await running();
    const base = `http://127.0.0.1:${port}`;
    const cookie = await demoSession(base);
    // The deploy as the walk writes it: no connection named, each required one bound.
    const deployed = await fetch(`${base}/api/deploy`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ toolSlug: 'deployed-tool', slug: 'my-tool' }),
    });
    expect(deployed.status).toBe(201);
    const { appKey } = (await deployed.json()) as { appKey: { key: string } };
    const app = (path: string) => fetch(`${base}/apps/my-tool${path}`, { headers: { cookie } });
    const view = (await (await app('/')).json()) as { connections: Array<{ slug: string }> };
    expect(view.connections.map((c) => c.slug)).toEqual(['llm-gateway', 'web-search']);
    const before = ((await balance(appKey.key)) as { credits_remaining_micros: number })
      .credits_remaining_micros;
    const search = await app('/search?q=hello');
    expect(search.status, await search.clone().text()).toBe(200);
    await search.arrayBuffer();
    // USD 0.005 a call plus the 20 % margin.
    await expect
      .poll(
        async () =>
          ((await balance(appKey.key)) as { credits_remaining_micros: number }).credits_remaining_micros,
      )
      .toBe(before - 6_000);
  });

  it('upserts the demo catalog at each boot and serves its logos, docs pages, prices and managed pools (spends: runs last)', async () => {
    await stopShared();
    // A store seeded by an older version: a row it did not have, a field it did not set.
    await withDataStore(async (db) => {
      await db.deleteFrom('integrations').where('provider', '=', 'calendar').execute();
      await db
        .updateTable('integrations')
        .set({ kind: 'service' })
        .where('provider', '=', 'speech')
        .execute();
    });
    await bootShared();
    const here = (url: string) => url.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:');
    const base = `http://127.0.0.1:${port}`;
    const { integrations } = (await (await fetch(`${base}/api/integrations`)).json()) as {
      integrations: Array<{ provider: string; logo_url: string; docs_url: string }>;
    };
    expect(integrations.map((row) => row.provider)).toEqual([
      'calendar',
      'llm-gateway',
      'speech',
      'transcription',
      'web-search',
    ]);
    for (const row of integrations) {
      const logo = await fetch(here(row.logo_url));
      expect(logo.status, row.logo_url).toBe(200);
      expect(logo.headers.get('content-type')).toContain('image/svg+xml');
      expect((await fetch(here(row.docs_url))).status, row.docs_url).toBe(200);
    }
    const models = (await (await fetch(`${base}/api/pricing/models`)).json()) as {
      models: Array<{ id: string; pricing: { prompt_per_million: number } }>;
    };
    expect(models.models.map((m) => [m.id, m.pricing.prompt_per_million])).toEqual([
      ['demo-echo', 0.18],
      ['demo-large', 3.6],
    ]);
    // The public pricing page shows them as a person reads prices: to the cent at least.
    const pricing = await (await fetch(`${base}/pricing`)).text();
    expect(pricing).toContain(
      '<tr><td>Demo large</td><td>200,000 tokens</td><td>USD 3.60</td><td>USD 18.00</td></tr>',
    );
    expect(pricing).toContain('<tr><td>Call</td><td>any</td><td>USD 0.006 per call</td></tr>');
    const sidebar = (await (await fetch(`${base}/api/pricing/integrations`)).json()) as {
      integrations: Array<{ slug: string }>;
    };
    expect(sidebar.integrations.map((row) => row.slug)).toEqual([
      'llm-gateway',
      'speech',
      'transcription',
      'web-search',
    ]);
    // The demo user switches speech on: its managed pool is provisioned and answers, metered.
    const cookie = await demoSession(base);
    const dashboard = (method: string, path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method,
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect(await (await dashboard('POST', '/api/integrations/speech', { enabled: true })).json()).toEqual({
      enabled: true,
    });
    const { connections } = (await (
      await fetch(`${base}/api/connections`, { headers: { cookie } })
    ).json()) as {
      connections: Array<{ id: string; provider: string; profile: string }>;
    };
    const stub = connections.find((row) => row.provider === 'speech');
    expect(stub?.profile).toBe('vendo_managed_pool');
    const { key } = (await (await dashboard('POST', `/api/connections/${stub!.id}/keys`, {})).json()) as {
      key: string;
    };
    const before = (await balance(key)) as { credits_remaining_micros: number };
    const spoken = await fetch(`${base}/proxy/speech/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', voice: 'demo' }),
    });
    expect(spoken.status).toBe(200);
    expect(spoken.headers.get('content-type')).toBe('audio/wav');
    await spoken.arrayBuffer();
    // USD 0.01 a call plus the 20 % margin.
    await expect
      .poll(
        async () => ((await balance(key)) as { credits_remaining_micros: number }).credits_remaining_micros,
      )
      .toBe(before.credits_remaining_micros - 12_000);
    await stopShared();
    const speech = await withDataStore((db) =>
      db.selectFrom('integrations').select('kind').where('provider', '=', 'speech').executeTakeFirstOrThrow(),
    );
    expect(speech.kind).toBe('speech_synthesis');
  });
});

describe('the demo file', () => {
  const folderFile = resolve('.service/demo.json');

  it('is .service/demo.json for the default store and PostgreSQL, and beside any other data folder', () => {
    expect(demoFileOf(undefined, resolve('.service/data'))).toEqual({
      path: folderFile,
      store: `pglite:${resolve('.service/data')}`,
    });
    expect(demoFileOf(' ', '/srv/data')).toEqual({ path: '/srv/data.demo.json', store: 'pglite:/srv/data' });
    // The database, never the credentials; the default port spelled out, so one database has one name.
    expect(demoFileOf('postgresql://u:hunter2@db/app?sslmode=require', '/unused')).toEqual({
      path: folderFile,
      store: 'postgres://db:5432/app',
    });
    expect(demoFileOf('postgres://u:hunter2@db:5433/app', '/unused').store).toBe('postgres://db:5433/app');
  });

  it("refuses a file recording another store, naming both; takes one of its own, an earlier version's or an in-memory store's", () => {
    const folder = mkdtempSync(join(tmpdir(), 'svc-demo-file-'));
    try {
      const path = join(folder, 'demo.json');
      const postgres = { path, store: 'postgres://db:5432/app' };
      expect(() => checkDemoFile(postgres)).not.toThrow();
      for (const recorded of [{ store: 'postgres://db:5432/app' }, {}, { store: 'memory://' }]) {
        writeFileSync(path, JSON.stringify({ ...recorded, keys: { appKey: 'service_sk_x' } }));
        expect(() => checkDemoFile(postgres), JSON.stringify(recorded)).not.toThrow();
      }
      writeFileSync(path, JSON.stringify({ store: `pglite:${join(folder, 'data')}` }));
      expect(() => checkDemoFile(postgres)).toThrow(
        `${path} holds the demo of another store (pglite:${join(folder, 'data')}), not of this one (postgres://db:5432/app). Start on that store, or move the file away`,
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
