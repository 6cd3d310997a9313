/**
 * The local deployer with real child processes: a crashing deployment is restarted with growing
 * delays and reads `crash_loop`; a process that ignores SIGTERM is killed after the grace; the log
 * ring keeps only the newest lines, and no more of a line than it keeps; the platform's own
 * environment does not leak into a deployment.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { DeployerError } from './deployer.js';
import { LocalDeployer } from './local-deployer.js';
import { followLines, LogRing } from './log-ring.js';

const dir = mkdtempSync(join(tmpdir(), 'local-deployer-'));
/** Serves the environment variable named by the path, and exits after `LIFETIME_MS` when set. */
writeFileSync(
  join(dir, 'server.cjs'),
  `const http = require('node:http');
process.on('SIGTERM', () => { if (!process.env.IGNORE_TERM) process.exit(0); console.log('ignoring SIGTERM'); });
http.createServer((req, res) => res.end(String(process.env[req.url.slice(1)] ?? ''))).listen(process.env.PORT, '127.0.0.1', () => {
  console.log('listening');
  for (let i = 0; i < Number(process.env.EXTRA_LINES ?? 0); i++) console.log('line ' + i);
});
if (process.env.LIFETIME_MS) setTimeout(() => process.exit(7), Number(process.env.LIFETIME_MS));
`,
);
const artifact = { type: 'directory' as const, path: dir, start: ['node', 'server.cjs'] };
let deployer: LocalDeployer;
afterEach(async () => {
  await deployer?.close();
});

const waitFor = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

describe('LocalDeployer', () => {
  it('runs the start command on a free port with only the deployment environment', async () => {
    deployer = new LocalDeployer();
    process.env.PLATFORM_ONLY_SECRET = 'do-not-leak';
    try {
      await deployer.deploy({ appId: 'a', tenantId: 't', artifact, env: { SERVICE_API_KEY: 'k-1' } });
    } finally {
      delete process.env.PLATFORM_ONLY_SECRET;
    }
    const endpoint = deployer.endpoint('a')!;
    expect(await (await fetch(`${endpoint}/SERVICE_API_KEY`)).text()).toBe('k-1');
    expect(await (await fetch(`${endpoint}/PLATFORM_ONLY_SECRET`)).text()).toBe('');
    expect(await (await fetch(`${endpoint}/NODE_OPTIONS`)).text()).toBe('--max-old-space-size=512');
    expect(deployer.status('a')).toMatchObject({ state: 'running', restarts: 0 });
    expect(deployer.logs('a', 10).map((l) => l.line)).toContain('listening');
  });

  it('restarts a deployment that dies, backing off, and reports a crash loop', async () => {
    deployer = new LocalDeployer({ backoffMs: 50, maxBackoffMs: 400, crashLoopAfter: 3 });
    await deployer.deploy({ appId: 'c', tenantId: 't', artifact, env: { LIFETIME_MS: '150' } });
    await waitFor(() => deployer.status('c').restarts >= 1 && deployer.status('c').state === 'running');
    expect(deployer.status('c').lastExit).toBe('exit 7');
    await waitFor(() => deployer.status('c').state === 'crash_loop');
    const restarted = deployer
      .logs('c', 100)
      .filter((l) => l.stream === 'deployer' && l.line.startsWith('restarting in'));
    const delays = restarted.map((l) => Number(l.line.match(/(\d+) ms/)![1]));
    expect(delays.slice(0, 3)).toEqual([50, 100, 200]);
    await deployer.stop('c');
    expect(deployer.status('c').state).toBe('stopped');
    expect(deployer.endpoint('c')).toBeNull();
  });

  it('kills a process that ignores SIGTERM after the grace', async () => {
    deployer = new LocalDeployer({ stopGraceMs: 300 });
    await deployer.deploy({ appId: 's', tenantId: 't', artifact, env: { IGNORE_TERM: '1' } });
    const endpoint = deployer.endpoint('s')!;
    const started = Date.now();
    await deployer.stop('s');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await expect(fetch(`${endpoint}/`)).rejects.toThrow();
  });

  it('rejects a release that exits before answering, with its last output, and keeps nothing running', async () => {
    deployer = new LocalDeployer();
    const failing = { ...artifact, start: ['node', '-e', 'console.error("bad config"); process.exit(2)'] };
    const attempt = deployer.deploy({ appId: 'f', tenantId: 't', artifact: failing, env: {} });
    await expect(attempt).rejects.toBeInstanceOf(DeployerError);
    await expect(attempt).rejects.toThrow(/exit 2[\s\S]*bad config/);
    expect(deployer.status('f').state).toBe('stopped');
    await expect(
      deployer.deploy({
        appId: 'g',
        tenantId: 't',
        artifact: { ...artifact, path: join(dir, 'missing') },
        env: {},
      }),
    ).rejects.toThrow(/does not exist/);
  });

  it('takes two deploys of one app in turn: the second replaces the first, none is left behind', async () => {
    deployer = new LocalDeployer();
    const ports: string[] = [];
    const first = deployer.deploy({ appId: 'r', tenantId: 't', artifact, env: { WHICH: 'first' } });
    const second = deployer.deploy({ appId: 'r', tenantId: 't', artifact, env: { WHICH: 'second' } });
    await first;
    ports.push(deployer.endpoint('r') ?? '');
    await second;
    const endpoint = deployer.endpoint('r')!;
    expect(await (await fetch(`${endpoint}/WHICH`)).text()).toBe('second');
    if (ports[0] && ports[0] !== endpoint) await expect(fetch(`${ports[0]}/WHICH`)).rejects.toThrow();
  });

  it('remembers when a stopped deployment stopped, and forgets a removed one', async () => {
    deployer = new LocalDeployer();
    await deployer.deploy({ appId: 's', tenantId: 't', artifact, env: {} });
    await deployer.stop('s');
    expect(deployer.status('s')).toMatchObject({ state: 'stopped', since: expect.any(String) });
    await deployer.remove('s');
    expect(deployer.status('s')).toEqual({ state: 'stopped', restarts: 0, lastExit: null, since: null });
    // Removing a running one stops it and keeps nothing either.
    await deployer.deploy({ appId: 'g', tenantId: 't', artifact, env: {} });
    const endpoint = deployer.endpoint('g')!;
    await deployer.remove('g');
    await expect(fetch(`${endpoint}/PORT`)).rejects.toThrow();
    expect(deployer.status('g').since).toBeNull();
  });

  it('starts nothing for a deploy whose signal is aborted before its turn comes (its app was deleted)', async () => {
    deployer = new LocalDeployer();
    await deployer.deploy({ appId: 'd', tenantId: 't', artifact, env: {} });
    const endpoint = deployer.endpoint('d')!;
    const deleted = new AbortController();
    const removing = deployer.remove('d');
    // Queued behind the remove's stop, and called off while it waits.
    const restart = deployer.deploy(
      { appId: 'd', tenantId: 't', artifact, env: {} },
      { signal: deleted.signal },
    );
    deleted.abort();
    await removing;
    await expect(restart).rejects.toBeInstanceOf(DeployerError);
    expect(deployer.status('d')).toEqual({ state: 'stopped', restarts: 0, lastExit: null, since: null });
    await expect(fetch(`${endpoint}/PORT`)).rejects.toThrow();
  });

  it('keeps only the newest log lines', async () => {
    deployer = new LocalDeployer({ logLines: 5 });
    await deployer.deploy({ appId: 'l', tenantId: 't', artifact, env: { EXTRA_LINES: '20' } });
    await waitFor(() => deployer.logs('l', 100).some((l) => l.line === 'line 19'));
    expect(deployer.logs('l', 100).map((l) => l.line)).toEqual([
      'line 15',
      'line 16',
      'line 17',
      'line 18',
      'line 19',
    ]);
    expect(deployer.logs('l', 2).map((l) => l.line)).toEqual(['line 18', 'line 19']);
  });

  it('holds no more of a line than it keeps, however long the process writes without a line break', async () => {
    const endless = join(dir, 'endless.cjs');
    writeFileSync(
      endless,
      `require('node:http').createServer((q, s) => s.end()).listen(process.env.PORT, '127.0.0.1', () => {
  const chunk = 'x'.repeat(1 << 20);
  let left = 128;
  const more = () => { while (left > 0) { left--; if (!process.stdout.write(chunk)) return void process.stdout.once('drain', more); } console.error('written'); };
  more();
});`,
    );
    deployer = new LocalDeployer();
    const before = process.memoryUsage().heapUsed;
    await deployer.deploy({
      appId: 'e',
      tenantId: 't',
      artifact: { ...artifact, start: ['node', endless] },
      env: {},
    });
    await waitFor(() => deployer.logs('e', 10).some((l) => l.line === 'written'));
    // 128 MiB without a line break went by: held whole until its end, it would all be in the heap.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 1024 * 1024);
    await deployer.stop('e');
    expect(deployer.logs('e', 10)).toEqual([]);
  });
});

describe('followLines', () => {
  it('ends lines at \\n, \\r\\n (also split between chunks) and \\r, cuts long ones, and ends the last at the end', async () => {
    const source = new PassThrough();
    const lines: string[] = [];
    followLines(source, (line) => lines.push(line));
    for (const chunk of ['one\r', '\ntwo\rthree\n', 'x'.repeat(5000), 'y'.repeat(5000), '\nlé', 'st']) {
      source.write(Buffer.from(chunk));
    }
    source.end();
    await new Promise((resolve) => source.on('end', resolve));
    expect(lines.map((line) => (line.length > 100 ? `${line[0]}*${line.length}` : line))).toEqual([
      'one',
      'two',
      'three',
      'x*4096',
      'lést',
    ]);
  });
});

describe('LogRing', () => {
  it('cuts long lines and answers oldest first', () => {
    const ring = new LogRing(3);
    for (const line of ['a', 'b', 'c', 'd', 'x'.repeat(10_000)]) ring.push('stdout', line);
    expect(ring.tail(10).map((l) => l.line.length)).toEqual([1, 1, 4096]);
    expect(ring.tail(0)).toEqual([]);
  });
});
