/**
 * A new Next.js app (App Router, `src/`, the `@/` alias) taken from `service init --yes` through
 * `sync` to `next dev` and a green `service doctor`. The app lives in a temp folder under this
 * package (Next.js resolves its linked packages only inside the workspace root); its
 * node_modules are links to the workspace's installed packages, so nothing is downloaded.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../examples/platform/test/support/boot.js';
import type { AppProcess } from './support/app-process.js';
import { BUILT, createApp, installed, PACKAGE, runCli } from './support/cli.js';
import { walkNextApp, writeNextAppSources } from './support/next-app.js';

let dir: string;
let app: AppProcess | undefined;

describe.skipIf(!BUILT)('service on a new Next.js app', () => {
  beforeAll(() => {
    const parent = join(PACKAGE, '.apps');
    mkdirSync(parent, { recursive: true });
    dir = createApp(
      {
        name: 'next-shop',
        version: '0.1.0',
        private: true,
        scripts: { dev: 'next dev' },
        dependencies: { next: '16.4.6', react: '19.3.1', 'react-dom': '19.3.1', '@service/next': '*' },
      },
      {
        next: installed('examples/next-host', 'next'),
        react: installed('examples/next-host', 'react'),
        'react-dom': installed('examples/next-host', 'react-dom'),
        '@types/react': installed('examples/next-host', '@types/react'),
        typescript: installed('.', 'typescript'),
      },
      parent,
    );
    writeNextAppSources(dir);
  });
  afterAll(async () => {
    await app?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('init --agent plans the Next.js wiring and writes nothing', async () => {
    const before = readFileSync(join(dir, 'package.json'), 'utf8');
    const result = await runCli(['init', '--agent', '--model-import', '@/lib/model'], { cwd: dir });
    expect(result.code).toBe(0);
    const plan = JSON.parse(result.stdout);
    expect(plan.framework).toBe('next');
    expect(plan.modelImport).toBe('@/lib/model');
    expect(plan.files.map((f: { path: string }) => f.path)).toContain('src/lib/model.ts');
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(before);
    expect(() => readFileSync(join(dir, '.env'))).toThrow();
  });

  it('init --yes, sync, next dev with the door open, then doctor is green', {
    timeout: 300_000,
  }, async () => {
    await walkNextApp(dir, 'proxy', await freePort(), (started) => {
      app = started;
    });
  });
});
