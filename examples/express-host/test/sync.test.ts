/**
 * `service sync` of the demo host, in a temp copy: the host's source with the page source it
 * serves (the orders page is the chat UI package's, so the copy holds both), its tools module, and
 * the `.service/config.json` that `service init` writes. The first sync captures both
 * `<Remixable>` baselines (exit 0); changing what the summary's wrapper holds is drift on the next.
 * The host started on the synced folder (`remixablesDir`) carries those hashes in its seeds: a
 * person's remix made before the change drifts once the host runs with the new sync, and rebases.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import {
  BUILT,
  ROOT,
  readJson,
  runCli,
  writeJson,
} from '../../../packages/framework-cli/test/support/cli.js';
import { startExpressHost } from '../src/host.js';

interface RemixablesFile {
  remixables: Record<string, { file: string; line: number; hash: string; source: string }>;
}

const PAGE = 'chat-ui/src/orders-page.tsx';
let dir: string;
/** The host's store across its restarts. */
let store: Store;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'express-host-sync-'));
  cpSync(join(ROOT, 'examples/express-host/src'), join(dir, 'src'), { recursive: true });
  cpSync(join(ROOT, 'examples/express-host/package.json'), join(dir, 'package.json'));
  cpSync(join(ROOT, 'examples/chat-ui/src'), join(dir, 'chat-ui/src'), { recursive: true });
  symlinkSync(join(ROOT, 'examples/express-host/node_modules'), join(dir, 'node_modules'));
  writeJson(join(dir, '.service/config.json'), {
    version: 1,
    framework: 'express',
    toolsModule: 'src/tools.ts',
    modelImport: './demo-model.js',
    wiring: [],
  });
});
afterAll(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface AppJson {
  id: string;
  version: number;
  drifted: boolean;
}

/** Starts the host on the synced folder, signs `email` in, runs `walk` with a wire caller, stops. */
async function withHost<T>(
  how: 'option' | 'environment',
  email: string,
  walk: (wire: (path: string, init?: { method?: string; json?: unknown }) => Promise<Response>) => Promise<T>,
): Promise<T> {
  store ??= await openMemoryStore();
  // The folder is named by the option or, as `pnpm start` would take it, by the environment.
  const host = await startExpressHost({
    store,
    logger: silentLogger,
    ...(how === 'option' ? { remixablesDir: dir, env: {} } : { env: { HOST_REMIXABLES_DIR: dir } }),
  });
  try {
    const login = await fetch(`${host.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email }),
    });
    const { token } = (await login.json()) as { token: string };
    return await walk((path, init = {}) =>
      fetch(`${host.url}/api/service${path}`, {
        method: init.method ?? 'GET',
        headers: {
          authorization: `Bearer ${token}`,
          ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
      }),
    );
  } finally {
    await host.close();
  }
}

const PERSON = 'remixer@example.com';

const sync = () => runCli(['sync'], { cwd: dir });
const baselines = () => readJson<RemixablesFile>(join(dir, '.service/remixables.json')).remixables;

describe.skipIf(!BUILT)('service sync of the demo host', () => {
  it('captures the orders page’s two <Remixable> baselines beside its four tools', async () => {
    const run = await sync();
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('service sync: 4 tools -> .service/catalog.json');
    expect(run.stdout).toContain('remixables: 2 captured -> .service/remixables.json');
    expect(baselines()).toMatchObject({
      'orders-header': { file: PAGE, source: '<OrdersHeader />' },
      'orders-summary': { file: PAGE, source: '<OrdersSummary count={orders?.length ?? null} />' },
    });

    // The person remixes the summary on the host as synced now: on its baseline, no drift.
    const remix = await withHost('option', PERSON, async (wire) => {
      const seeded = await wire('/apps/seed', { method: 'POST', json: { component: 'orders-summary' } });
      expect(seeded.status).toBe(201);
      return ((await seeded.json()) as { app: AppJson }).app;
    });
    expect(remix).toMatchObject({ version: 1, drifted: false });
  });

  it('reports the summary as drifted once what its wrapper holds changes, and the header as it was', async () => {
    const before = baselines();
    const file = join(dir, PAGE);
    const source = readFileSync(file, 'utf8');
    const wrapped = '<OrdersSummary count={orders?.length ?? null} />';
    expect(source).toContain(wrapped);
    writeFileSync(file, source.replace(wrapped, '<OrdersSummary count={orders?.length ?? null} compact />'));

    const run = await sync();
    expect(run.code).toBe(0);
    const line = before['orders-summary']!.line;
    expect(run.stdout).toContain(
      `changed  remixable orders-summary (${PAGE}:${line}): remixes of it will report drift and can be rebased`,
    );
    expect(run.stdout).not.toContain('remixable orders-header');
    const after = baselines();
    expect(after['orders-summary']!.hash).not.toBe(before['orders-summary']!.hash);
    expect(after['orders-header']).toEqual(before['orders-header']);

    // The host runs with the new sync: the person's remix has drifted, and rebases onto it.
    await withHost('environment', PERSON, async (wire) => {
      const listed = await wire('/apps?component=orders-summary');
      const [remix] = ((await listed.json()) as { apps: AppJson[] }).apps;
      expect(remix).toMatchObject({ version: 1, drifted: true });
      const rebased = await wire(`/apps/${remix!.id}/rebase-pin`, { method: 'POST', json: {} });
      expect(rebased.status).toBe(200);
      expect(((await rebased.json()) as { app: AppJson }).app).toMatchObject({ version: 2, drifted: false });
    });
  });
});
