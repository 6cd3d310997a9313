/**
 * Registry publishing: `service mcp server-json` and `service mcp verify-domain`, then doctor
 * against a host with the door open behind a front server that serves the HTTP challenge (as a
 * proxy or CDN in front of the app does): green when everything agrees, red when server.json
 * or the challenge does not.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHost, startExpressHost } from '../../../examples/express-host/src/host.js';
import { openMemoryStore } from '../../core/test/support/stores.js';
import { BUILT, baseEnv, readJson, runCli, runInProcess, writeJson } from './support/cli.js';

const PUBLIC_BASE = 'https://shop.example.com';
const MCP_URL = `${PUBLIC_BASE}/api/service/mcp`;

function appFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-fcli-mcp-'));
  writeJson(join(dir, 'package.json'), {
    name: '@acme/shop',
    version: '2.0.0',
    description: 'The Acme shop',
  });
  return dir;
}

/** The public key of an Ed25519 seed (PKCS#8: a fixed prefix, then the 32 seed bytes). */
function publicKeyOfSeed(seedHex: string): Buffer {
  const der = Buffer.concat([
    Buffer.from('302e020100300506032b657004220420', 'hex'),
    Buffer.from(seedHex, 'hex'),
  ]);
  const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  return Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x!, 'base64url');
}

// The first tests spawn the bin, as a user runs it; the rest run the same `run` in this process
// (`runInProcess`): they are about what the commands answer, which is the same either way.
describe.skipIf(!BUILT)('service mcp', () => {
  it('exits 1 naming the subcommands when none or an unknown one is given', async () => {
    expect(await runCli(['mcp'], { cwd: appFolder() })).toMatchObject({
      code: 1,
      stderr: 'service mcp: name a subcommand: server-json or verify-domain.\n',
    });
    expect(await runCli(['mcp', 'publish'], { cwd: appFolder() })).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/unknown subcommand publish/),
    });
  });
});

describe.skipIf(!BUILT)('service mcp server-json', () => {
  it('names the server by the reverse-DNS of the domain and the package name’s last segment', async () => {
    const dir = appFolder();
    const result = await runInProcess(['mcp', 'server-json', '--domain', 'Example.com'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(readJson(join(dir, 'server.json'))).toEqual({
      $schema: expect.stringContaining('/2025-12-11/'),
      name: 'com.example/shop',
      description: 'The Acme shop',
      version: '2.0.0',
      remotes: [{ type: 'streamable-http', url: 'https://example.com/api/service/mcp' }],
    });
  });

  it('accepts a URL on a subdomain, refuses another domain and plain http', async () => {
    const dir = appFolder();
    const ok = await runInProcess(['mcp', 'server-json', '--domain', 'example.com', '--url', MCP_URL], {
      cwd: dir,
    });
    expect(ok.code).toBe(0);
    expect(readJson<{ remotes: Array<{ url: string }> }>(join(dir, 'server.json')).remotes[0]!.url).toBe(
      MCP_URL,
    );
    rmSync(join(dir, 'server.json'));
    const elsewhere = await runInProcess(
      ['mcp', 'server-json', '--domain', 'example.com', '--url', 'https://notexample.com/mcp'],
      {
        cwd: dir,
      },
    );
    expect(elsewhere).toMatchObject({ code: 1, stderr: expect.stringMatching(/not on example.com/) });
    const http = await runInProcess(['mcp', 'server-json', '--url', 'http://example.com/mcp'], { cwd: dir });
    expect(http).toMatchObject({ code: 1, stderr: expect.stringMatching(/must be https/) });
    const noDomain = await runInProcess(['mcp', 'server-json'], { cwd: dir });
    expect(noDomain).toMatchObject({ code: 1, stderr: expect.stringMatching(/--domain/) });
    expect(existsSync(join(dir, 'server.json'))).toBe(false);
  });

  it('cuts a long description to 100 code points, never inside a character', async () => {
    const dir = appFolder();
    writeJson(join(dir, 'package.json'), { name: 'shop', description: `${'a'.repeat(99)}😀 and more` });
    const result = await runInProcess(['mcp', 'server-json', '--domain', 'example.com'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(readJson(join(dir, 'server.json')).description).toBe(`${'a'.repeat(99)}😀`);
  });

  it('refuses a package name with no letter or digit the registry name can hold, which would name every such server alike', async () => {
    const dir = appFolder();
    writeJson(join(dir, 'package.json'), { name: '@ácme/шоп', version: '1.0.0' });
    const refused = await runInProcess(['mcp', 'server-json', '--domain', 'example.com'], { cwd: dir });
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('"@ácme/шоп" has none of those'),
    });
    expect(existsSync(join(dir, 'server.json'))).toBe(false);
    // One Latin letter or digit is enough; the rest become dashes, as the registry's names want.
    writeJson(join(dir, 'package.json'), { name: '@ácme/шоп2', version: '1.0.0' });
    const named = await runInProcess(['mcp', 'server-json', '--domain', 'example.com'], { cwd: dir });
    expect(named.code, named.stderr).toBe(0);
    expect(readJson(join(dir, 'server.json')).name).toBe('com.example/---2');
  });

  it('overwrites server.json only with --force', async () => {
    const dir = appFolder();
    writeFileSync(join(dir, 'server.json'), '{"mine":true}\n');
    const refused = await runInProcess(['mcp', 'server-json', '--domain', 'example.com'], { cwd: dir });
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/--force/) });
    expect(readFileSync(join(dir, 'server.json'), 'utf8')).toBe('{"mine":true}\n');
    const forced = await runInProcess(['mcp', 'server-json', '--domain', 'example.com', '--force'], {
      cwd: dir,
    });
    expect(forced.code).toBe(0);
    expect(readJson(join(dir, 'server.json')).name).toBe('com.example/shop');
    // A folder named server.json is not overwritten by --force: one line, not Node's EISDIR.
    const other = appFolder();
    mkdirSync(join(other, 'server.json'));
    const folder = await runInProcess(['mcp', 'server-json', '--domain', 'example.com', '--force'], {
      cwd: other,
    });
    expect(folder).toMatchObject({
      code: 1,
      stderr: `service mcp server-json: cannot write ${other}/server.json: ${other}/server.json is a folder.\n`,
    });
  });

  it('prints the written file and document under --json', async () => {
    const dir = appFolder();
    const result = await runInProcess(['mcp', 'server-json', '--json', '--domain', 'example.com'], {
      cwd: dir,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      file: join(dir, 'server.json'),
      server: readJson(join(dir, 'server.json')),
    });
  });
});

describe.skipIf(!BUILT)('service mcp verify-domain', () => {
  it('needs --domain and --key-out (exit 1)', async () => {
    const dir = appFolder();
    expect(await runInProcess(['mcp', 'verify-domain', '--key-out', 'k'], { cwd: dir })).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--domain is required/),
    });
    expect(
      await runInProcess(['mcp', 'verify-domain', '--domain', 'example.com'], { cwd: dir }),
    ).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--key-out is required/),
    });
    expect(existsSync(join(dir, 'k'))).toBe(false);
  });

  it('writes the Ed25519 seed (0600), prints the challenge of its public key, never overwrites', async () => {
    const dir = appFolder();
    const result = await runInProcess(
      [
        'mcp',
        'verify-domain',
        '--domain',
        'example.com',
        '--key-out',
        'registry.key',
        '--write-well-known',
        'public',
      ],
      { cwd: dir },
    );
    expect(result.code, result.stderr).toBe(0);
    const keyFile = join(dir, 'registry.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const seed = readFileSync(keyFile, 'utf8').trim();
    expect(seed).toMatch(/^[0-9a-f]{64}$/);
    const challenge = `v=MCPv1; k=ed25519; p=${publicKeyOfSeed(seed).toString('base64')}`;
    expect(result.stdout.split(challenge)).toHaveLength(3); // once for DNS, once for HTTP
    expect(result.stdout).toContain('https://example.com/.well-known/mcp-registry-auth');
    expect(readFileSync(join(dir, 'public/.well-known/mcp-registry-auth'), 'utf8')).toBe(`${challenge}\n`);

    const again = await runInProcess(
      ['mcp', 'verify-domain', '--domain', 'example.com', '--key-out', 'registry.key'],
      {
        cwd: dir,
      },
    );
    expect(again).toMatchObject({ code: 1, stderr: expect.stringMatching(/never overwritten/) });
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(seed);
  });

  it('keeps no key when the well-known file cannot be written, so a re-run can make one', async () => {
    const dir = appFolder();
    const args = ['mcp', 'verify-domain', '--domain', 'example.com', '--key-out', 'w.key'];
    const result = await runInProcess([...args, '--write-well-known', 'package.json'], { cwd: dir });
    expect(result).toMatchObject({
      code: 1,
      stderr: `service mcp verify-domain: cannot write ${dir}/package.json/.well-known/mcp-registry-auth: ${dir}/package.json is a file, not a folder; nothing was written.\n`,
    });
    expect(existsSync(join(dir, 'w.key'))).toBe(false);
    const again = await runInProcess([...args, '--write-well-known', 'public'], { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(existsSync(join(dir, 'w.key'))).toBe(true);
  });

  it('refuses a path it cannot write under in one line (exit 1), before writing anything', async () => {
    const dir = appFolder();
    mkdirSync(join(dir, 'public'));
    writeFileSync(join(dir, 'public/.well-known'), 'a file where the folder goes\n');
    mkdirSync(join(dir, 'site/.well-known/mcp-registry-auth'), { recursive: true });
    const before = readdirSync(dir).sort();
    const base = ['mcp', 'verify-domain', '--domain', 'example.com'];
    for (const [args, message] of [
      // A file where a folder of --key-out goes (Node: ENOTDIR).
      [
        ['--key-out', 'package.json/registry.key'],
        `${dir}/package.json/registry.key: ${dir}/package.json is a file, not a folder`,
      ],
      [['--key-out', 'keys/registry.key'], `${dir}/keys/registry.key: the folder ${dir}/keys does not exist`],
      // The key's path is fine; the well-known file's is not: the key is not written either.
      [
        ['--key-out', 'registry.key', '--write-well-known', 'public'],
        `${dir}/public/.well-known/mcp-registry-auth: ${dir}/public/.well-known is a file, not a folder`,
      ],
      [
        ['--key-out', 'registry.key', '--write-well-known', 'site'],
        `${dir}/site/.well-known/mcp-registry-auth: ${dir}/site/.well-known/mcp-registry-auth is a folder`,
      ],
    ] as const) {
      const result = await runInProcess([...base, ...args], { cwd: dir });
      expect(result).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `service mcp verify-domain: cannot write ${message}; nothing was written.\n`,
      });
      expect(readdirSync(dir).sort()).toEqual(before);
    }
    const json = await runInProcess([...base, '--json', '--key-out', 'package.json/k'], { cwd: dir });
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        message: expect.stringMatching(/is a file, not a folder; nothing was written\.$/),
        exitCode: 1,
      },
    });
  });

  it('prints the key file, the challenge and the well-known file under --json', async () => {
    const dir = appFolder();
    const result = await runInProcess(
      [
        'mcp',
        'verify-domain',
        '--json',
        '--domain',
        'example.com',
        '--key-out',
        'k',
        '--write-well-known',
        'pub',
      ],
      { cwd: dir },
    );
    expect(result.code, result.stderr).toBe(0);
    const body = JSON.parse(result.stdout);
    const challenge = `v=MCPv1; k=ed25519; p=${publicKeyOfSeed(readFileSync(join(dir, 'k'), 'utf8').trim()).toString('base64')}`;
    expect(body).toEqual({
      domain: 'example.com',
      keyFile: join(dir, 'k'),
      challenge,
      challengeUrl: 'https://example.com/.well-known/mcp-registry-auth',
      wellKnownFile: join(dir, 'pub/.well-known/mcp-registry-auth'),
    });
  });
});

describe.skipIf(!BUILT)('service doctor with the door open', () => {
  let store: Store;
  let host: RunningHost;
  let front: Server;
  let frontUrl: string;
  let challenge: string | null = null;
  /** Rewrites a JSON document on its way out, as a broken deployment would serve it. */
  let tamper: { path: string; change: (doc: Record<string, unknown>) => void } | null = null;
  /** The front hides the doctor probes, as an app outside development mode answers them. */
  let probesHidden = false;
  let dir: string;

  beforeAll(async () => {
    store = await openMemoryStore();
    host = await startExpressHost({
      store,
      development: true,
      logger: silentLogger,
      env: {},
      baseUrl: PUBLIC_BASE,
    });
    // The front: serves the registry challenge file, passes everything else to the app.
    front = createServer(async (req, res) => {
      if (req.url === '/.well-known/mcp-registry-auth') {
        if (challenge === null) res.writeHead(404).end();
        else res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge);
        return;
      }
      if (probesHidden && req.url?.startsWith('/api/service/doctor/')) {
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const answer = await fetch(`${host.url}${req.url}`, {
        method: req.method!,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
      });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
      if (tamper && req.url?.startsWith(tamper.path)) {
        const doc = (await answer.json()) as Record<string, unknown>;
        tamper.change(doc);
        res.end(JSON.stringify(doc));
      } else res.end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;

    dir = appFolder();
    writeJson(join(dir, '.service/config.json'), {
      version: 1,
      framework: 'express',
      toolsModule: 'tools.ts',
      modelImport: './ai',
      wiring: [],
    });
    writeJson(join(dir, '.service/catalog.json'), { version: 1, tools: [] });
    writeFileSync(
      join(dir, '.env'),
      `SERVICE_STORE_ENCRYPTION_KEY=${Buffer.alloc(32, 7).toString('base64')}\n`,
    );
    const made = await runInProcess(['mcp', 'server-json', '--domain', 'example.com', '--url', MCP_URL], {
      cwd: dir,
    });
    expect(made.code).toBe(0);
    const verified = await runInProcess(
      ['mcp', 'verify-domain', '--domain', 'example.com', '--key-out', 'k', '--write-well-known', 'public'],
      { cwd: dir },
    );
    expect(verified.code).toBe(0);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (front ? front.close(() => resolve()) : resolve()));
    await host?.close();
    await store?.close();
  });

  const doctor = () => runInProcess(['doctor'], { cwd: dir, env: baseEnv({ SERVICE_URL: frontUrl }) });

  it('is green when the metadata, the server card, server.json and the challenge agree', async () => {
    challenge = readFileSync(join(dir, 'public/.well-known/mcp-registry-auth'), 'utf8');
    const result = await doctor();
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain(
      `✓ door discovery: both OAuth documents and the server card agree on ${MCP_URL}`,
    );
    expect(result.stdout).toContain('✓ server.json agrees with the live door (com.example/shop)');
    expect(result.stdout).toContain('✓ /.well-known/mcp-registry-auth serves the registry challenge');
    expect(result.stdout).toContain('✓ actAs is configured');
    expect(result.stdout).toContain('✓ present mode: the user’s credentials reach the host’s API');

    const json = await runInProcess(['doctor', '--json'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: frontUrl }),
    });
    expect(json.code).toBe(0);
    const body = JSON.parse(json.stdout);
    expect(body).toMatchObject({ ok: true, exitCode: 0, url: frontUrl });
    expect(body.checks).toContainEqual({
      level: 'ok',
      text: 'server.json agrees with the live door (com.example/shop)',
    });
  });

  it('takes the running app’s word that its base URL is set, though neither doctor’s environment nor .env has it', async () => {
    // The wiring opens the door without baseUrl; the app got SERVICE_BASE_URL from its own
    // process environment (as a process manager or deploy sets it).
    const config = readFileSync(join(dir, '.service/config.json'), 'utf8');
    writeFileSync(
      join(dir, 'service.ts'),
      "import { createService } from '@service/core';\nexport const service = createService({ mcp: true });\n",
    );
    writeJson(join(dir, '.service/config.json'), { ...JSON.parse(config), wiring: ['service.ts'] });
    try {
      const result = await doctor();
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toContain('✓ wiring: service.ts');
      expect(result.stdout).not.toContain('E-MCP-009');
    } finally {
      writeFileSync(join(dir, '.service/config.json'), config);
      rmSync(join(dir, 'service.ts'));
    }
  });

  it('only warns when no HTTP challenge is served (the DNS record may prove the domain)', async () => {
    challenge = null;
    const result = await doctor();
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/! \/\.well-known\/mcp-registry-auth answered 404/);
    // The folder --write-well-known wrote to: Express's static middleware skips dot-folders.
    expect(result.stdout).toContain(
      "on Express, serve that folder with `app.use(express.static('public', { dotfiles: 'allow' }))`",
    );
  });

  it('exits 1 on a challenge that does not start with v=MCPv1', async () => {
    challenge = 'hello';
    const result = await doctor();
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('✗ /.well-known/mcp-registry-auth does not start with v=MCPv1');
    const json = await runInProcess(['doctor', '--json'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: frontUrl }),
    });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      exitCode: 1,
      checks: expect.arrayContaining([
        { level: 'fail', text: '/.well-known/mcp-registry-auth does not start with v=MCPv1' },
      ]),
    });
  });

  it('only warns when the doctor probes answer 404 (the app is not in development mode)', async () => {
    challenge = readFileSync(join(dir, 'public/.well-known/mcp-registry-auth'), 'utf8');
    probesHidden = true;
    try {
      const result = await doctor();
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toContain('! doctor probes answer 404: the app is not in development mode');
      expect(result.stdout).not.toContain('present mode');
      expect(result.stdout).not.toContain('act-as');
    } finally {
      probesHidden = false;
    }
  });

  it('says why /status failed: a production app (principal_required), a server that is not the app', async () => {
    const production = await startExpressHost({ store, development: false, logger: silentLogger, env: {} });
    const other = createServer((_req, res) => res.writeHead(404).end('Not Found'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const forbidden = await runInProcess(['doctor'], {
        cwd: dir,
        env: baseEnv({ SERVICE_URL: production.url }),
      });
      expect(forbidden.code).toBe(1);
      expect(forbidden.stdout).toContain(
        `✗ ${production.url}/api/service/status answered 403 (principal_required: outside development mode /status is for signed-in users`,
      );
      const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      const elsewhere = await runInProcess(['doctor'], { cwd: dir, env: baseEnv({ SERVICE_URL: otherUrl }) });
      expect(elsewhere.stdout).toContain(
        `✗ ${otherUrl}/api/service/status answered 404 (no service wire there: is SERVICE_URL the app`,
      );
      // A query would swallow the wire's paths: refused, never asked.
      const query = await runInProcess(['doctor'], {
        cwd: dir,
        env: baseEnv({ SERVICE_URL: `${frontUrl}/?a=b` }),
      });
      expect(query).toMatchObject({
        code: 1,
        stderr: `Not the app's base URL: ${frontUrl}/?a=b has a query or fragment; leave it out.\n`,
      });
    } finally {
      await production.close();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it.each([
    [
      'an OAuth metadata document allows another PKCE method than S256',
      '/.well-known/oauth-authorization-server/',
      (doc: Record<string, unknown>) => {
        doc.code_challenge_methods_supported = ['plain', 'S256'];
      },
      'code_challenge_methods_supported is not exactly S256',
    ],
    [
      'the protected resource names another issuer',
      '/.well-known/oauth-protected-resource/',
      (doc: Record<string, unknown>) => {
        doc.authorization_servers = ['https://elsewhere.example.net'];
      },
      'authorization_servers does not name the issuer',
    ],
    [
      'the server card points at another endpoint',
      '/.well-known/mcp/server-card.json',
      (doc: Record<string, unknown>) => {
        doc.transport = { ...(doc.transport as object), endpoint: 'https://elsewhere.example.net/mcp' };
      },
      'the server card’s endpoint is not the MCP URL',
    ],
  ])('exits 1 when %s', async (_case, path, change, problem) => {
    challenge = readFileSync(join(dir, 'public/.well-known/mcp-registry-auth'), 'utf8');
    tamper = { path, change };
    try {
      const result = await doctor();
      expect(result.code, result.stdout).toBe(1);
      expect(result.stdout).toMatch(new RegExp(`✗ door discovery: .*${problem}`));
    } finally {
      tamper = null;
    }
  });

  it('exits 1 when server.json names another URL than the live door', async () => {
    challenge = null;
    const file = join(dir, 'server.json');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace(MCP_URL, 'https://api.example.com/mcp'));
    try {
      const result = await doctor();
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(
        /✗ server.json: remotes\[0\]\.url https:\/\/api\.example\.com\/mcp is not the door’s/,
      );
    } finally {
      writeFileSync(file, original);
    }
  });

  it.each([
    [
      'a remote URL that is no URL',
      { remotes: [{ url: 'not a url' }] },
      /remotes\[0\]\.url not a url is not a URL/,
    ],
    ['a name that is no string', { name: 5 }, /name is not a registry name/],
    ['a $schema that is no string', { $schema: 5 }, /\$schema is not 2025-12-11/],
    ['remotes that are no array', { remotes: 'x' }, /remotes\[0\]\.url is missing/],
  ])('fails the server.json check, never crashes, on %s', async (_case, change, problem) => {
    challenge = null;
    const file = join(dir, 'server.json');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(original), ...change }));
    try {
      const result = await doctor();
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(new RegExp(`✗ server\\.json: .*${problem.source}`));
      const json = await runInProcess(['doctor', '--json'], {
        cwd: dir,
        env: baseEnv({ SERVICE_URL: frontUrl }),
      });
      expect(JSON.parse(json.stdout)).toMatchObject({
        ok: false,
        checks: expect.arrayContaining([{ level: 'fail', text: expect.stringMatching(problem) }]),
      });
      writeFileSync(file, '[1]');
      expect((await doctor()).stdout).toContain('✗ server.json: not a JSON object');
    } finally {
      writeFileSync(file, original);
    }
  });
});
