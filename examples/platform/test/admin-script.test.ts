/**
 * `pnpm admin` as an operator runs it: granting credit, suspending and resuming a tenant named by
 * id or by its owner's email, with an audit row for each; usage errors, refusals and a store held
 * by another process answer with their documented exit codes.
 *
 * The commands run in this process (`main`, the script's whole behaviour but the process around
 * it) on one embedded store in a data folder, which the test holds open: a child process loads
 * TypeScript and opens the store, seconds each. Child processes on the same data folder check
 * what only a process shows: the exit codes as the shell sees them, stdout and stderr, a store
 * held by another process, and writes that outlast the process that made them.
 *
 * @see docs/operators.md
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureAccount } from '@service/core/identity';
import { createStore, type Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TSX_LOADER } from '../../../packages/core/test/support/spawn.js';
import { makeDataFolder } from '../../../packages/core/test/support/stores.js';
import { main } from '../src/admin-cli.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = join(ROOT, 'examples/platform/src/admin.ts');
const OWNER = 'Owner@Example.test';
/** Each child process loads TypeScript and opens the store: seconds each. */
const SCRIPT_TESTS_MS = 120_000;

let folder: string;
let dataDir: string;
let tenantId: string;
/**
 * The data folder's embedded store, as the script opens it (`url: ''` keeps it embedded when the
 * environment names a Postgres server, as CI does). Held open by this process until the last
 * test, which runs the script as child processes and needs the folder free.
 */
let store: Store | undefined;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the script's `main` in this process, on the test's store. */
async function admin(...args: string[]): Promise<Run> {
  if (!store) throw new Error('The store is closed: the child-process test runs last');
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    store,
  });
  return { code, stdout, stderr };
}

/** Runs the script as `pnpm admin` does, a child process on the data folder, to its end. */
function adminProcess(...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SERVICE_DATA_DIR: dataDir,
    TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'),
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', TSX_LOADER, SCRIPT, ...args], {
    cwd: folder,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The test's store, while it is open. */
function db() {
  if (!store) throw new Error('The store is closed: the child-process test runs last');
  return store.db;
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'svc-admin-'));
  dataDir = join(folder, 'data');
  // Migrated already: the script opens a folder `pnpm start` has made; making one is not its test.
  await makeDataFolder(dataDir);
  store = await createStore({ dataDir, url: '' });
  tenantId = (await ensureAccount(store.db, { subject: 'owner-1', email: OWNER.toLowerCase() })).tenantId;
});
afterAll(async () => {
  await store?.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('pnpm admin', () => {
  it('lists, disables, enables tools and publishes a release from a service.yaml', async () => {
    await db().insertInto('tools').values({ slug: 'script-tool', name: 'Script tool' }).execute();
    const manifest = join(folder, 'service.yaml');
    writeFileSync(manifest, 'name: script-tool\nversion: 1\nruntime: node\n');
    expect(await admin('tools', 'publish', 'script-tool', '1.0.0', manifest)).toMatchObject({
      code: 0,
      stdout: 'Published script-tool 1.0.0: now its active release.\n',
    });
    expect(await admin('tools', 'disable', 'script-tool')).toMatchObject({
      code: 0,
      stdout: 'Disabled script-tool.\n',
    });
    expect((await admin('tools', 'list')).stdout).toMatch(/script-tool\s+disabled\s+1\.0\.0\s+Script tool/);
    expect(await admin('tools', 'enable', 'script-tool')).toMatchObject({ code: 0 });
    expect((await admin('tools', 'list')).stdout).toMatch(/script-tool\s+enabled\s+1\.0\.0/);

    writeFileSync(manifest, 'name: script-tool\nversion: 2\nruntime: node\n');
    const invalid = await admin('tools', 'publish', 'script-tool', '2.0.0', manifest);
    expect(invalid).toMatchObject({ code: 1, stdout: '' });
    expect(invalid.stderr).toBe(`The manifest is not valid:\n  ${manifest}:2:10  version: must be 1\n`);
    expect(await admin('tools', 'disable', 'no-such-tool')).toMatchObject({
      code: 1,
      stderr: 'Tool not found: no-such-tool\n',
    });
    expect((await admin('tools', 'frobnicate')).code).toBe(2);
  });

  it('lists tenants, grants by owner email, suspends and resumes by id, each with an audit row', async () => {
    const listed = await admin('tenants');
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toContain(tenantId);
    expect(listed.stdout).toMatch(/active\s+USD 0\.00\s+owner@example\.test/);

    const granted = await admin('grant', OWNER, '12.34', '--reason', 'Launch credit');
    expect(granted).toMatchObject({ code: 0, stderr: '' });
    expect(granted.stdout).toContain(`Granted USD 12.34 to ${tenantId}: balance USD 12.34`);

    const suspended = await admin('suspend', tenantId, '--reason', 'Abuse report');
    expect(suspended).toMatchObject({
      code: 0,
      stdout: `Suspended ${tenantId}: its metered calls are refused.\n`,
    });
    const again = await admin('suspend', tenantId, '--reason', 'twice');
    expect(again).toMatchObject({ code: 1, stdout: '', stderr: 'The tenant is already suspended\n' });
    expect((await admin('tenants')).stdout).toMatch(/suspended\s+USD 12\.34/);

    const resumed = await admin('resume', tenantId);
    expect(resumed).toMatchObject({ code: 0, stdout: `Resumed ${tenantId}.\n` });

    const tenant = await db()
      .selectFrom('tenants')
      .select('status')
      .where('id', '=', tenantId)
      .executeTakeFirstOrThrow();
    const ledger = await db()
      .selectFrom('ledger_entries')
      .select(['kind', 'amount_micros', 'description'])
      .where('tenant_id', '=', tenantId)
      .execute();
    const actions = await db()
      .selectFrom('operator_actions')
      .select(['action', 'operator', 'reason', 'amount_micros'])
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute();
    expect(tenant.status).toBe('active');
    expect(ledger).toEqual([{ kind: 'grant', amount_micros: 12_340_000, description: 'Launch credit' }]);
    const operator = expect.stringMatching(/^cli/);
    expect(actions).toEqual([
      { action: 'grant', operator, reason: 'Launch credit', amount_micros: 12_340_000 },
      { action: 'suspend', operator, reason: 'Abuse report', amount_micros: null },
      { action: 'resume', operator, reason: null, amount_micros: null },
    ]);
  });

  it('answers usage errors with exit 2 and the usage, and refusals with exit 1, changing nothing', async () => {
    for (const args of [
      [],
      ['bogus'],
      ['grant', tenantId, '5'],
      ['grant', tenantId, '1.005', '--reason', 'x'],
      ['grant', tenantId, '10000.01', '--reason', 'x'],
      ['suspend', tenantId],
      ['tenants', '--frobnicate'],
    ]) {
      const result = await admin(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('Usage: pnpm admin <command>');
    }
    expect(await admin('grant', 'nobody@example.test', '5', '--reason', 'x')).toMatchObject({
      code: 1,
      stderr: 'No workspace is owned by nobody@example.test.\n',
    });
    expect(await admin('suspend', 'not-a-tenant', '--reason', 'x')).toMatchObject({
      code: 1,
      stderr: 'Tenant not found: not-a-tenant\n',
    });
    expect(await admin('resume', tenantId)).toMatchObject({
      code: 1,
      stderr: 'The tenant is not suspended\n',
    });
    const help = await admin('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    const actions = await db()
      .selectFrom('operator_actions')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(actions).toHaveLength(3);
  });

  it('lists integrations and withdraws one from the catalog and brings it back', async () => {
    await db()
      .insertInto('integrations')
      .values([
        { provider: 'web-search', name: 'Web search' },
        { provider: 'speech', name: 'Speech', kind: 'speech_synthesis' },
      ])
      .execute();
    const listed = await admin('integrations', 'list');
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toMatch(
      /^speech\s+enabled\s+speech_synthesis\s+Speech\nweb-search\s+enabled\s+service\s+Web search\n$/,
    );
    expect(await admin('integrations', 'disable', 'speech')).toMatchObject({
      code: 0,
      stdout: 'Disabled speech.\n',
    });
    expect((await admin('integrations', 'list')).stdout).toMatch(/^speech\s+disabled/);
    expect(await admin('integrations', 'enable', 'speech')).toMatchObject({
      code: 0,
      stdout: 'Enabled speech.\n',
    });
    expect(await admin('integrations', 'disable', 'nope')).toMatchObject({
      code: 1,
      stderr: 'Integration not found: nope\n',
    });
    for (const args of [
      ['integrations'],
      ['integrations', 'enable'],
      ['integrations', 'list', 'x'],
      ['integrations', 'drop', 'speech'],
    ]) {
      const result = await admin(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('integrations takes list, or enable or disable and a slug');
    }
    const enabled = await db()
      .selectFrom('integrations')
      .select(['provider', 'enabled'])
      .orderBy('provider')
      .execute();
    expect(enabled).toEqual([
      { provider: 'speech', enabled: true },
      { provider: 'web-search', enabled: true },
    ]);
  });

  it(
    'exits 3 while another process holds the embedded store',
    async () => {
      // This process holds the data folder's store (`store`).
      const result = await adminProcess('tenants');
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^The store cannot be opened: /);
    },
    SCRIPT_TESTS_MS,
  );

  // Last: it closes the test's store, so that the script's own processes can open the folder.
  it(
    'as a process: exit codes 0, 1 and 2 with their output, its writes kept in the data folder',
    async () => {
      await store!.close();
      store = undefined;
      expect(await adminProcess('suspend', OWNER, '--reason', 'From a shell')).toEqual({
        code: 0,
        stdout: `Suspended ${tenantId}: its metered calls are refused.\n`,
        stderr: '',
      });
      // Refused by what the previous process wrote: the suspension outlived it.
      expect(await adminProcess('suspend', tenantId, '--reason', 'twice')).toEqual({
        code: 1,
        stdout: '',
        stderr: 'The tenant is already suspended\n',
      });
      const bogus = await adminProcess('bogus');
      expect(bogus).toMatchObject({ code: 2, stdout: '' });
      expect(bogus.stderr).toContain('Usage: pnpm admin <command>');
    },
    SCRIPT_TESTS_MS,
  );
});
