/**
 * The Express wiring `service init` generates, in an ES module app compiled by `tsc` with NodeNext
 * resolution: it type-checks, and the compiled app runs under plain Node as well as under tsx,
 * since its relative imports carry the extension Node's ESM loader needs. An app that resolves as
 * a bundler does keeps extensionless imports, as it writes its own.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../examples/platform/test/support/boot.js';
import { type AppProcess, startApp } from './support/app-process.js';
import { BUILT, createApp, installed, readJson, runCli, writeJson } from './support/cli.js';

const APP_SOURCE = `import express from 'express';
import { mountServiceRoutes } from './service.js';

const app = express();
mountServiceRoutes(app);
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
`;

const PACKAGE_JSON = {
  name: 'shop',
  version: '1.0.0',
  private: true,
  type: 'module',
  dependencies: { '@service/core': '*', '@service/express': '*', ai: '^6', express: '^5.3.0' },
};

/** What the app compiles and runs with, linked from the workspace as a package manager would. */
function links(): Record<string, string> {
  return {
    ai: installed('examples/express-host', 'ai'),
    express: installed('examples/express-host', 'express'),
    tsx: installed('examples/express-host', 'tsx'),
    '@types/express': installed('examples/express-host', '@types/express'),
    '@types/node': installed('.', '@types/node'),
    typescript: installed('packages/framework-cli', 'typescript'),
  };
}

let app: AppProcess | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

/** Starts the app and asks the wire for its status, which answers once the store is open. */
async function wireAnswers(command: string[], cwd: string): Promise<void> {
  app = await startApp(command, { cwd, port: await freePort(), ready: /listening/ });
  const status = await fetch(`${app.url}/api/service/status`, { signal: AbortSignal.timeout(60_000) });
  expect(status.status, app.output()).toBe(200);
}

describe.skipIf(!BUILT)('the generated Express wiring in an ES module app (NodeNext)', () => {
  let dir: string;
  beforeAll(() => {
    dir = createApp(PACKAGE_JSON, links());
    writeJson(join(dir, 'tsconfig.json'), {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        outDir: 'dist',
      },
      include: ['*.ts'],
    });
    writeFileSync(join(dir, 'app.ts'), APP_SOURCE);
  });

  it('imports with .js, type-checks, and runs under plain node after tsc and under tsx', {
    timeout: 240_000,
  }, async () => {
    const init = await runCli(['init', '--yes'], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    const wiring = readFileSync(join(dir, 'service.ts'), 'utf8');
    expect(wiring).toContain(`import { tools } from './service-tools.js';`);
    expect(wiring).toContain(`import { model } from "./ai.js";`);
    // The model module is TypeScript, named as the wiring imports it; sync and refine find it.
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({ modelImport: './ai.js' });
    expect(readFileSync(join(dir, 'ai.ts'), 'utf8')).toContain('export const model');
    const sync = await runCli(['sync'], { cwd: dir });
    expect(sync.code, sync.stderr).toBe(0);
    const refine = await runCli(['refine', '--json', '--ask', 'hide say_hello'], { cwd: dir });
    expect(refine.code, refine.stderr).toBe(0);

    const tsc = join(dir, 'node_modules/typescript/bin/tsc');
    await promisify(execFile)(process.execPath, [tsc, '-p', '.'], { cwd: dir });
    await wireAnswers([process.execPath, '--env-file=.env', 'dist/app.js'], dir);
    await app!.stop();
    await wireAnswers([process.execPath, '--env-file=.env', '--import', 'tsx', 'app.ts'], dir);
  });

  it('keeps the imports extensionless in an app that resolves as a bundler does', async () => {
    const bundled = createApp(PACKAGE_JSON, links());
    writeJson(join(bundled, 'tsconfig.json'), {
      compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler', strict: true },
    });
    const init = await runCli(['init', '--yes'], { cwd: bundled });
    expect(init.code, init.stderr).toBe(0);
    const wiring = readFileSync(join(bundled, 'service.ts'), 'utf8');
    expect(wiring).toContain(`import { tools } from './service-tools';`);
    expect(wiring).toContain(`import { model } from "./ai";`);
  });
});
