/**
 * What a host developer does with a new Next.js app, whichever Next.js it has: `service init
 * --yes`, `sync`, the MCP door switched on, `next dev`, then `service doctor` green.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { type AppProcess, startApp } from './app-process.js';
import { baseEnv, readJson, runCli, writeJson } from './cli.js';

/** A new app's own files, as `create-next-app` makes them: App Router under `src/`, the `@/` alias. */
export function writeNextAppSources(dir: string): void {
  writeJson(join(dir, 'tsconfig.json'), {
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
  });
  mkdirSync(join(dir, 'src/app'), { recursive: true });
  writeFileSync(
    join(dir, 'src/app/layout.tsx'),
    'export default function RootLayout({ children }: { children: React.ReactNode }) {\n  return (\n    <html lang="en">\n      <body>{children}</body>\n    </html>\n  );\n}\n',
  );
  writeFileSync(
    join(dir, 'src/app/page.tsx'),
    'export default function Page() {\n  return <p>shop</p>;\n}\n',
  );
}

/**
 * Walks the app in `dir` (App Router under `src/`) from init to a green doctor; `firstFile` is the
 * file Next.js runs before its routes, which init writes (`proxy`, or `middleware` below 16).
 * The app listens on `port`; it is handed to `started` as soon as it is up, for the caller to stop.
 */
export async function walkNextApp(
  dir: string,
  firstFile: 'proxy' | 'middleware',
  port: number,
  started: (app: AppProcess) => void,
): Promise<void> {
  const init = await runCli(['init', '--yes'], { cwd: dir });
  expect(init.code, init.stderr).toBe(0);
  expect(readFileSync(join(dir, 'src/app/api/service/[...service]/route.ts'), 'utf8')).toContain(
    'toNextHandlers',
  );
  expect(readFileSync(join(dir, 'src/app/.well-known/[...path]/route.ts'), 'utf8')).toContain(
    'toNextWellKnownHandler',
  );
  expect(readFileSync(join(dir, 'src/lib/service.ts'), 'utf8')).toContain('from "@/lib/ai"');
  expect(readFileSync(join(dir, `src/${firstFile}.ts`), 'utf8')).toContain(`export function ${firstFile}(`);
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
      '      tools,\n',
      '      tools,\n      mcp: true,\n      oauth: { session: () => new Response(null, { status: 401 }), principal: (subject: string) => ({ subject }) },\n',
    ),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const app = await startApp(
    [
      process.execPath,
      join(dir, 'node_modules/next/dist/bin/next'),
      'dev',
      '--port',
      String(port),
      '--hostname',
      '127.0.0.1',
    ],
    { cwd: dir, port, ready: /Ready in/, env: { NEXT_TELEMETRY_DISABLED: '1', SERVICE_BASE_URL: baseUrl } },
  );
  started(app);
  // The first request compiles the route: wait for it before doctor's own (shorter) timeout.
  const status = () => fetch(`${app.url}/api/service/status`, { signal: AbortSignal.timeout(180_000) });
  expect((await status()).status, app.output()).toBe(200);

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

  // Another route and a page compiled meanwhile: both reach the one service, which still answers.
  const discovery = await fetch(`${app.url}/.well-known/oauth-authorization-server`, {
    signal: AbortSignal.timeout(120_000),
  });
  expect(discovery.status, app.output()).toBe(200);
  expect((await fetch(app.url, { signal: AbortSignal.timeout(120_000) })).status, app.output()).toBe(200);
  expect((await status()).status, app.output()).toBe(200);

  // A path Next.js cannot decode gets the wire's 400 from the file init wrote, not Next's 500.
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
}
