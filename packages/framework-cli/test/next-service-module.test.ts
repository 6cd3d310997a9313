/**
 * The service module `service init` writes for a Next.js app (`lib/service.ts`), loaded as the
 * app's server loads it: a first request made while the store cannot open answers 503, and the
 * next request makes the service again instead of failing the same way until a restart.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Service } from '@service/core/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { importHostModule } from '../src/host-module.js';
import { BUILT, createApp, runCli } from './support/cli.js';

const dirs: string[] = [];
const saved = { url: process.env.DATABASE_URL, dataDir: process.env.SERVICE_DATA_DIR };

afterAll(() => {
  if (saved.url === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = saved.url;
  if (saved.dataDir === undefined) delete process.env.SERVICE_DATA_DIR;
  else process.env.SERVICE_DATA_DIR = saved.dataDir;
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!BUILT)("init's Next.js service module", () => {
  it('makes the service again on the next request after a first one failed', {
    timeout: 120_000,
  }, async () => {
    const dir = createApp({ name: 'shop', private: true, dependencies: { next: '^16.0.0' } }, {});
    dirs.push(dir);
    const init = await runCli(['init', '--yes'], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    const { getService } = (await importHostModule(dir, join(dir, 'lib/service.ts'))) as {
      getService: () => Promise<Service>;
    };

    // The embedded store's folder is a file at first: the store cannot open.
    const dataDir = join(dir, 'store');
    writeFileSync(dataDir, 'not a folder');
    process.env.DATABASE_URL = '';
    process.env.SERVICE_DATA_DIR = dataDir;
    await expect(getService()).rejects.toThrow();

    rmSync(dataDir);
    mkdirSync(dataDir);
    const service = await getService();
    try {
      const status = await service.fetch(new Request('http://localhost/api/service/status'));
      expect(status.status).toBe(200);
      expect(await getService()).toBe(service);
    } finally {
      await service.close();
    }
  });
});
