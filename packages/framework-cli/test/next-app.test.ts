/**
 * A new Next.js app (App Router, `src/`, the `@/` alias) taken from `service init --yes` through
 * `sync` to `next dev` and a green `service doctor`. The app lives in a temp folder under this
 * package (Next.js resolves its linked packages only inside the workspace root); its
 * node_modules are links to the workspace's installed packages, so nothing is downloaded.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../examples/platform/test/support/boot.js';
import { type AppProcess, startApp } from './support/app-process.js';
import { BUILT, baseEnv, createApp, installed, PACKAGE, readJson, runCli } from './support/cli.js';

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
    writeFileSync(
      join(dir, 'tsconfig.json'),
      `${JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            lib: ['dom', 'esnext'],
            module: 'esnext',
            moduleResolution: 'bundler',
            jsx: 'react-jsx',
            strict: true,
            skipLibCheck: true,
            noEmit: true,
            isolatedModules: true,
            esModuleInterop: true,
            resolveJsonModule: true,
            paths: { '@/*': ['./src/*'] },
          },
          include: ['**/*.ts', '**/*.tsx'],
          exclude: ['node_modules'],
        },
        null,
        2,
      )}\n`,
    );
    mkdirSync(join(dir, 'src/app'), { recursive: true });
    writeFileSync(
      join(dir, 'src/app/layout.tsx'),
      'export default function RootLayout({ children }: { children: React.ReactNode }) {\n  return (\n    <html lang="en">\n      <body>{children}</body>\n    </html>\n  );\n}\n',
    );
    writeFileSync(
      join(dir, 'src/app/page.tsx'),
      'export default function Page() {\n  return <p>shop</p>;\n}\n',
    );
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
    timeout: 240_000,
  }, async () => {
    const init = await runCli(['init', '--yes'], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(dir, 'src/app/api/service/[...service]/route.ts'), 'utf8')).toContain(
      'toNextHandlers',
    );
    expect(readFileSync(join(dir, 'src/app/.well-known/[...path]/route.ts'), 'utf8')).toContain(
      'toNextWellKnownHandler',
    );
    expect(readFileSync(join(dir, 'src/lib/service.ts'), 'utf8')).toContain('from "@/lib/ai"');
    expect(readFileSync(join(dir, 'src/proxy.ts'), 'utf8')).toContain('export function proxy(');
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({
      framework: 'next',
      toolsModule: 'src/lib/service-tools.ts',
      modelImport: '@/lib/ai',
    });

    const sync = await runCli(['sync'], { cwd: dir });
    expect(sync.code, sync.stderr).toBe(0);
    expect(
      readJson<{ tools: Array<{ name: string }> }>(join(dir, '.service/catalog.json')).tools[0]?.name,
    ).toBe('say_hello');

    // The MCP door open: its discovery documents at the origin root and its CORS preflights
    // must reach the wire through the routes init wrote.
    const serviceFile = join(dir, 'src/lib/service.ts');
    writeFileSync(
      serviceFile,
      readFileSync(serviceFile, 'utf8').replace(
        '    tools,\n',
        '    tools,\n    mcp: true,\n    oauth: { session: () => new Response(null, { status: 401 }), principal: (subject: string) => ({ subject }) },\n',
      ),
    );
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    app = await startApp(
      [
        process.execPath,
        join(dir, 'node_modules/next/dist/bin/next'),
        'dev',
        '--port',
        String(port),
        '--hostname',
        '127.0.0.1',
      ],
      {
        cwd: dir,
        port,
        ready: /Ready in/,
        env: { NEXT_TELEMETRY_DISABLED: '1', SERVICE_BASE_URL: baseUrl },
      },
    );
    // The first request compiles the route: wait for it before doctor's own (shorter) timeout.
    const status = await fetch(`${app.url}/api/service/status`, { signal: AbortSignal.timeout(180_000) });
    expect(status.status, app.output()).toBe(200);

    const preflight = await fetch(`${app.url}/api/service/mcp/register`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://client.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
      signal: AbortSignal.timeout(60_000),
    });
    expect(preflight.headers.get('access-control-allow-origin'), app.output()).toBeTruthy();

    // A path Next.js cannot decode gets the wire's 400 from the proxy init wrote, not Next's 500.
    for (const path of ['/api/service/threads/%E0%A4%A', '/.well-known/%']) {
      const malformed = await fetch(`${app.url}${path}`, { signal: AbortSignal.timeout(60_000) });
      expect(malformed.status, `${path}\n${app.output()}`).toBe(400);
      expect(await malformed.json()).toMatchObject({ error: { code: 'malformed_url' } });
    }

    const doctor = await runCli(['doctor'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: app.url, SERVICE_BASE_URL: baseUrl }),
    });
    expect(doctor.code, `${doctor.stdout}\n${app.output()}`).toBe(0);
    expect(doctor.stdout).toContain('✓ wiring: src/app/api/service/[...service]/route.ts');
    expect(doctor.stdout).toContain('✓ wiring: src/app/.well-known/[...path]/route.ts');
    expect(doctor.stdout).toContain('✓ door discovery:');
    expect(doctor.stdout).toMatch(/service doctor: green/);
  });
});
