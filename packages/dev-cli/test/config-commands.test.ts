/**
 * `dev`, `whoami` and `logout` around the config file: modes, missing or damaged files, an
 * unreachable platform. The browser login itself is in login.test.ts.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from '../../core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';
import { createClient, ServiceAuthError } from '../../sdk/src/index.js';
import { run } from '../src/index.js';
import { createTestIo, type TestIo, writeConfigFile } from './support/io.js';

let store: TestStore;
let running: RunningPlatform;
let tenant: TenantFixture;
const ios: TestIo[] = [];

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
  tenant = await createTenantFixture(running.platform, 1_500_000);
});
afterAll(async () => {
  await running?.close();
  await store?.dispose();
});
afterEach(async () => {
  await Promise.all(ios.splice(0).map((io) => io.dispose()));
});

/** The URL of a loopback port nothing listens on. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function loggedIn(overrides: Record<string, unknown> = {}, key = tenant.cliKey): Promise<TestIo> {
  const io = await createTestIo();
  ios.push(io);
  await writeConfigFile(io, { apiBase: running.url, apiKey: key, tenantId: tenant.tenantId }, overrides);
  return io;
}

describe('service dev', () => {
  it('writes .env.service-dev with mode 0600: key, tenant, platform and proxy variables of service.yaml', async () => {
    const io = await loggedIn();
    await writeFile(
      join(io.cwd, 'service.yaml'),
      'name: my-tool\nversion: 1\nruntime: node\nintegrations: [llm-gateway, github]\n',
    );
    await writeFile(join(io.cwd, '.gitignore'), 'node_modules\n.env.service-dev\n');
    expect(await run(['dev'], io)).toBe(0);
    const path = join(io.cwd, '.env.service-dev');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines[0]).toMatch(/^# Written by service dev at .*keep it out of version control\.$/);
    expect(lines.slice(1)).toEqual([
      `SERVICE_BASE_URL=${running.url}`,
      `SERVICE_CLI_KEY=${tenant.cliKey}`,
      "# SERVICE_API_KEY=<your app's App Key>: @service/sdk's connections and events need it; run service dev --app-key <key>",
      `SERVICE_TENANT_ID=${tenant.tenantId}`,
      `LLM_GATEWAY_API_KEY=${tenant.cliKey}`,
      `LLM_GATEWAY_BASE_URL=${running.url}/proxy/llm-gateway`,
      `GITHUB_API_KEY=${tenant.cliKey}`,
      `GITHUB_BASE_URL=${running.url}/proxy/github`,
      '',
    ]);
    expect(io.out()).toContain('proxy variables for llm-gateway, github');
    expect(io.err()).toBe('');
  });

  it('tightens an existing file to 0600, and warns when git would not ignore it', async () => {
    const io = await loggedIn();
    const path = join(io.cwd, '.env.service-dev');
    await writeFile(path, 'OLD=1\n', { mode: 0o644 });
    expect(await run(['dev'], io)).toBe(0);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, 'utf8')).not.toContain('OLD=1');
    expect(io.out()).toContain('No service.yaml here');
    expect(io.err()).toBe('Warning: add .env.service-dev to .gitignore; it holds your key.\n');
  });

  it('asks git itself whether it would leave the file out, in a repository', async () => {
    const io = await loggedIn();
    await new Promise((resolve, reject) =>
      execFile('git', ['init', '--quiet'], { cwd: io.cwd }, (error) =>
        error ? reject(error) : resolve(null),
      ),
    );
    // A pattern that looks right, then a negation: git would commit the key.
    await writeFile(join(io.cwd, '.gitignore'), '.env*\n!.env.service-dev\n');
    expect(await run(['dev', '--json'], io)).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ gitignored: false });
    // A pattern no literal check knows, which git reads as covering it.
    await writeFile(join(io.cwd, '.gitignore'), '*.service-dev\n');
    expect(await run(['dev', '--json'], io)).toBe(0);
    expect(JSON.parse(io.out().trim().split('\n').at(-1)!)).toMatchObject({ gitignored: true });
  });

  it('writes nothing when service.yaml is invalid, and exits 1 when not logged in', async () => {
    const io = await loggedIn();
    await writeFile(join(io.cwd, 'service.yaml'), 'name: X\n');
    expect(await run(['dev'], io)).toBe(1);
    expect(io.err()).toContain('service.yaml has problems; run service validate');
    await expect(stat(join(io.cwd, '.env.service-dev'))).rejects.toThrow(/ENOENT/);
    const anonymous = await createTestIo();
    ios.push(anonymous);
    expect(await run(['dev'], anonymous)).toBe(1);
    expect(anonymous.err()).toBe('Not logged in. Run service login first.\n');
  });

  it('says what it could not read or write, leaving no copy of the key behind', async () => {
    // A folder named service.yaml is not "no service.yaml here".
    const unreadable = await loggedIn();
    await mkdir(join(unreadable.cwd, 'service.yaml'));
    expect(await run(['dev'], unreadable)).toBe(1);
    expect(unreadable.err()).toBe('Could not read service.yaml (EISDIR). Nothing was written.\n');
    await expect(stat(join(unreadable.cwd, '.env.service-dev'))).rejects.toThrow(/ENOENT/);
    // A folder named .env.service-dev: the rename over it fails.
    const unwritable = await loggedIn();
    await mkdir(join(unwritable.cwd, '.env.service-dev'));
    expect(await run(['dev', '--json'], unwritable)).toBe(1);
    expect(JSON.parse(unwritable.out())).toEqual({
      error: {
        message: `Could not write .env.service-dev in ${unwritable.cwd} (EISDIR). Nothing was written.`,
        exitCode: 1,
      },
    });
    expect(await readdir(unwritable.cwd)).toEqual(['.env.service-dev']);
  });
});

describe('service whoami', () => {
  it('ignores environment API keys: only the config file counts', async () => {
    const io = await createTestIo();
    ios.push(io);
    io.env.SERVICE_API_KEY = tenant.cliKey;
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toBe('Not logged in. Run service login first.\n');
  });

  it('says the key was rejected when the platform refuses it', async () => {
    const io = await loggedIn({}, `service_sk_${'r'.repeat(43)}`);
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toBe(
      'The platform rejected the stored key (revoked or expired). Run service login again.\n',
    );
  });

  it('prints a workspace name with control characters as text, never as terminal sequences', async () => {
    // Written before names were checked, or by hand: the store may hold one.
    const before = await store.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    await store.db
      .updateTable('tenants')
      .set({ name: 'Acme \u001b[31mRED\u001b]0;owned\u0007' })
      .where('id', '=', tenant.tenantId)
      .execute();
    try {
      const io = await loggedIn();
      expect(await run(['whoami'], io)).toBe(0);
      expect(io.out().includes('\u001b') || io.out().includes('\u0007')).toBe(false);
      expect(io.out()).toContain('Acme \ufffd[31mRED\ufffd]0;owned\ufffd');
    } finally {
      await store.db
        .updateTable('tenants')
        .set({ name: before.name })
        .where('id', '=', tenant.tenantId)
        .execute();
    }
  });

  it('says so when the platform cannot be reached', async () => {
    const apiBase = await deadUrl();
    const io = await loggedIn({ apiBase });
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toBe(`Could not reach ${apiBase}: ECONNREFUSED\n`);
  });

  it('says so when the connection drops in the middle of an answer', async () => {
    // Headers, the start of a body, then the socket closed: a proxy restarting, a network gone.
    const dropping = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
      res.write('{"tenant":');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(dropping.address() as { port: number }).port}`;
    try {
      const io = await loggedIn({ apiBase });
      expect(await run(['whoami'], io)).toBe(1);
      expect(io.err()).toBe(
        `Could not reach ${apiBase}: the connection closed before the whole answer came\n`,
      );
      const json = await loggedIn({ apiBase });
      expect(await run(['--json', 'logout'], json)).toBe(0);
      expect(JSON.parse(json.out()).warning).toMatch(
        /\(Could not reach .*: the connection closed before the whole answer came\)/,
      );
    } finally {
      dropping.closeAllConnections();
      await new Promise<void>((resolve) => dropping.close(() => resolve()));
    }
  });

  // Only a 404 with the platform's DEPLOYMENT_NOT_FOUND is "no such deployment" for ssh.
  it.each([
    [200, '<!doctype html><p>Welcome</p>', [['whoami'], ['ssh', 'test-app']]],
    [404, '<!doctype html><p>Not here</p>', [['whoami'], ['ssh', 'test-app']]],
    [404, '{"message":"Not found"}', [['ssh', 'test-app']]],
    [502, '<!doctype html><p>Bad gateway</p>', [['ssh', 'test-app']]],
  ])('says apiBase may be wrong when another web server answers %i', async (status, page, commands) => {
    const other = createHttpServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/html' }).end(page);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
    try {
      for (const command of commands) {
        const io = await loggedIn({ apiBase });
        expect(await run(command, io)).toBe(1);
        expect(io.err()).toMatch(
          new RegExp(`^${apiBase} gave an unexpected answer to /api/cli/\\S+: is apiBase the platform\\?`),
        );
      }
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('names a damaged config file instead of crashing', async () => {
    const io = await loggedIn();
    await writeFile(`${io.home}/.service/config.json`, '{oops');
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toMatch(/config\.json is not valid JSON\. Run service login to write it again\.\n$/);
  });

  it('never sends the key in the clear to an apiBase edited into the file', async () => {
    const listener = createHttpServer((_req, res) => res.writeHead(200).end('{}'));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.2', resolve));
    let asked = 0;
    listener.on('request', () => asked++);
    try {
      const port = (listener.address() as { port: number }).port;
      for (const apiBase of [`http://127.0.0.2:${port}`, `http://platform.example:${port}`, 'not a url']) {
        const io = await loggedIn({ apiBase });
        expect(await run(['whoami'], io), apiBase).toBe(1);
        expect(io.err()).toMatch(/config\.json has an apiBase that is not (https:\/\/|a URL)/);
      }
      expect(asked).toBe(0);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it('puts a loosened config file back to 0600', async () => {
    const io = await loggedIn();
    await chmod(`${io.home}/.service/config.json`, 0o644);
    expect(await run(['whoami'], io)).toBe(0);
    expect((await stat(`${io.home}/.service/config.json`)).mode & 0o777).toBe(0o600);
    expect(io.err()).toContain('had mode 644; set it back to 600');
    expect(io.out()).toContain('Balance  USD 1.50');
  });
});

describe('service dev and the SDK', () => {
  it('writes SERVICE_API_KEY from --app-key, which the SDK reads to list connections; the CLI key alone is refused with the reason', async () => {
    const io = await loggedIn();
    expect(await run(['dev', '--app-key', tenant.appKey, '--json'], io)).toBe(0);
    expect(JSON.parse(io.out())).toEqual({
      file: '.env.service-dev',
      variables: ['SERVICE_BASE_URL', 'SERVICE_CLI_KEY', 'SERVICE_API_KEY', 'SERVICE_TENANT_ID'],
      appKey: true,
      gitignored: false,
    });
    const env = Object.fromEntries(
      (await readFile(join(io.cwd, '.env.service-dev'), 'utf8'))
        .split('\n')
        .filter((line) => line && !line.startsWith('#'))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({ SERVICE_CLI_KEY: tenant.cliKey, SERVICE_API_KEY: tenant.appKey });
    const sdk = createClient({ apiKey: env.SERVICE_API_KEY, baseUrl: env.SERVICE_BASE_URL });
    expect(Array.isArray(await sdk.connections.list())).toBe(true);
    const asCli = createClient({ apiKey: env.SERVICE_CLI_KEY, baseUrl: env.SERVICE_BASE_URL });
    const refused = await asCli.connections.list().catch((error) => error);
    expect(refused).toBeInstanceOf(ServiceAuthError);
    expect(refused.message).toContain('takes an App Key');
  });

  it('refuses an --app-key that is not a key', async () => {
    const io = await loggedIn();
    expect(await run(['dev', '--app-key', ''], io)).toBe(2);
    expect(io.err()).toMatch(/^--app-key must be an App Key/);
    // Only the whole key's shape is taken: the value becomes a line of the env file.
    for (const bad of [`${tenant.appKey}\nEVIL=1`, 'service_sk_a b#c', `${tenant.appKey}x`]) {
      const other = await loggedIn();
      expect(await run(['dev', '--app-key', bad], other), JSON.stringify(bad)).toBe(2);
    }
  });
});

describe('errors', () => {
  it('shows how long to wait when the platform rate-limits', async () => {
    const own = await openTestStore();
    const limited = await startPlatform(own, { rateLimits: { cliBalance: { limit: 1, windowMs: 60_000 } } });
    try {
      const someone = await createTenantFixture(limited.platform);
      const io = await createTestIo();
      ios.push(io);
      await writeConfigFile(io, { apiBase: limited.url, apiKey: someone.cliKey, tenantId: someone.tenantId });
      expect(await run(['whoami'], io)).toBe(0);
      expect(await run(['whoami'], io)).toBe(1);
      expect(io.err()).toMatch(
        /^The platform is limiting requests from here \(Rate limit exceeded\)\. Try again in \d+ s\.\n$/,
      );
      const json = await createTestIo({ env: { HOME: io.home } });
      ios.push(json);
      expect(await run(['whoami', '--json'], json)).toBe(1);
      expect(JSON.parse(json.out())).toEqual({
        error: { message: expect.stringMatching(/Try again in \d+ s\.$/), exitCode: 1 },
      });
    } finally {
      await limited.close();
      await own.dispose();
    }
  });

  it('reads a fractional Retry-After as seconds rounded up, not as a date long past', async () => {
    const limiting = createHttpServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2.5' });
      res.end('{"message":"Rate limit exceeded"}');
    });
    await new Promise<void>((resolve) => limiting.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(limiting.address() as { port: number }).port}`;
    try {
      const io = await loggedIn({ apiBase });
      expect(await run(['whoami'], io)).toBe(1);
      expect(io.err()).toBe(
        'The platform is limiting requests from here (Rate limit exceeded). Try again in 3 s.\n',
      );
    } finally {
      limiting.closeAllConnections();
      await new Promise<void>((resolve) => limiting.close(() => resolve()));
    }
  });

  it('refuses a config whose apiKey is empty instead of looking elsewhere for a key', async () => {
    const io = await loggedIn({ apiKey: '' });
    io.env.SERVICE_API_KEY = tenant.cliKey;
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toMatch(/config\.json has an empty apiKey\. Run service login to write it again\.\n$/);
  });

  it('refuses a config whose apiKey is out of shape, never repeating it', async () => {
    // Edited by hand: a line break fetch refuses with the whole key in its message, a curly quote.
    const cases = [`${tenant.cliKey}\nX`, `\u201c${tenant.cliKey}\u201d`].flatMap((damaged) =>
      [['whoami'], ['dev'], ['ssh', 'weather-tool'], ['logout']].map((command) => ({ damaged, command })),
    );
    for (const { damaged, command } of cases) {
      const io = await loggedIn({ apiKey: damaged });
      expect(await run(command, io), command[0]).toBe(command[0] === 'logout' ? 0 : 1);
      expect(io.err()).toContain('config.json has an apiKey that is not a whole service_sk_ key');
      expect(io.out() + io.err()).not.toContain(tenant.cliKey.slice(12));
      await expect(stat(join(io.cwd, '.env.service-dev'))).rejects.toThrow(/ENOENT/);
    }
  });
});

describe('service logout', () => {
  it('removes the file with a warning when the platform cannot be reached', async () => {
    const apiBase = await deadUrl();
    const io = await loggedIn({ apiBase });
    expect(await run(['logout'], io)).toBe(0);
    expect(io.err()).toMatch(
      /^Warning: could not revoke service_sk_…\S{4} on the platform \(Could not reach/,
    );
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
  });

  it('removes the file quietly when it was already revoked', async () => {
    const io = await loggedIn({}, `service_sk_${'q'.repeat(43)}`);
    expect(await run(['logout'], io)).toBe(0);
    expect(io.err()).toBe('');
    expect(io.out()).toMatch(/^Logged out: service_sk_…qqqq is revoked/);
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
    expect(await run(['logout', '--json'], io)).toBe(0);
    expect(io.out().split('\n').at(-2)).toBe('{"loggedOut":true,"revoked":false,"warning":null}');
    // Logged out: commands say so.
    expect(await run(['whoami'], io)).toBe(1);
    expect(io.err()).toContain('Not logged in. Run service login first.');
  });

  it('removes the file with a warning when the platform refuses the revoke', async () => {
    // An App Key pasted into the config: the platform will not revoke a deployment's key.
    const io = await loggedIn({}, tenant.appKey);
    expect(await run(['logout'], io)).toBe(0);
    expect(io.err()).toMatch(
      /^Warning: could not revoke service_sk_…\S{4} on the platform \(the platform answered 403: Only CLI keys can be revoked with logout\)\. Removed it from .*config\.json anyway/,
    );
    await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
    expect(
      (
        await fetch(`${running.url}/api/cli/balance`, {
          headers: { authorization: `Bearer ${tenant.appKey}` },
        })
      ).status,
    ).toBe(200);
  });

  it('removes a damaged config file with a warning, since it holds no key to revoke', async () => {
    for (const damaged of ['{oops', JSON.stringify({ apiKey: 'service_sk_x' })]) {
      const io = await loggedIn();
      await writeFile(`${io.home}/.service/config.json`, damaged);
      expect(await run(['logout'], io)).toBe(0);
      expect(io.err()).toMatch(
        /^Warning: .*config\.json (is not valid JSON|is missing apiBase, apiKey or tenantId), so no key could be revoked/,
      );
      await expect(stat(`${io.home}/.service/config.json`)).rejects.toThrow(/ENOENT/);
    }
  });

  it('has nothing to do when not logged in', async () => {
    const io = await createTestIo();
    ios.push(io);
    expect(await run(['logout'], io)).toBe(0);
    expect(io.out()).toBe('Not logged in: nothing to do.\n');
    // So is a file an earlier version's logout left, holding only the platform URL.
    await mkdir(`${io.home}/.service`, { recursive: true });
    await writeFile(`${io.home}/.service/config.json`, JSON.stringify({ apiBase: running.url }));
    expect(await run(['logout'], io)).toBe(0);
    expect(io.out()).toBe('Not logged in: nothing to do.\n'.repeat(2));
  });
});
