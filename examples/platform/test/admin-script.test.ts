/**
 * `pnpm admin` as an operator runs it: a child process on the embedded store of a data folder,
 * granting credit, suspending and resuming a tenant named by id or by its owner's email, with an
 * audit row for each; usage errors, refusals and a store held by another process answer with
 * their documented exit codes.
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

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = join(ROOT, 'examples/platform/src/admin.ts');
const OWNER = 'Owner@Example.test';
/** Each run is a process that loads TypeScript and opens the store: seconds each. */
const SCRIPT_TESTS_MS = 120_000;

let folder: string;
let dataDir: string;
let tenantId: string;

/** Runs the script to its end: exit code and output. */
function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

/**
 * Opens the data folder (the script must have exited: one process at a time); `url: ''` keeps it
 * the embedded store when the environment names a Postgres server (as CI does).
 */
async function withStore<T>(read: (store: Store) => Promise<T>): Promise<T> {
  const store = await createStore({ dataDir, url: '' });
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'svc-admin-'));
  dataDir = join(folder, 'data');
  tenantId = await withStore(
    async (store) =>
      (await ensureAccount(store.db, { subject: 'owner-1', email: OWNER.toLowerCase() })).tenantId,
  );
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('pnpm admin', () => {
  it(
    'lists, disables, enables tools and publishes a release from a service.yaml',
    async () => {
      await withStore(async ({ db }) => {
        await db.insertInto('tools').values({ slug: 'script-tool', name: 'Script tool' }).execute();
      });
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
    },
    SCRIPT_TESTS_MS,
  );

  it(
    'lists tenants, grants by owner email, suspends and resumes by id, each with an audit row',
    async () => {
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

      const { tenant, ledger, actions } = await withStore(async ({ db }) => ({
        tenant: await db
          .selectFrom('tenants')
          .select('status')
          .where('id', '=', tenantId)
          .executeTakeFirstOrThrow(),
        ledger: await db
          .selectFrom('ledger_entries')
          .select(['kind', 'amount_micros', 'description'])
          .where('tenant_id', '=', tenantId)
          .execute(),
        actions: await db
          .selectFrom('operator_actions')
          .select(['action', 'operator', 'reason', 'amount_micros'])
          .where('tenant_id', '=', tenantId)
          .orderBy('id')
          .execute(),
      }));
      expect(tenant.status).toBe('active');
      expect(ledger).toEqual([{ kind: 'grant', amount_micros: 12_340_000, description: 'Launch credit' }]);
      const operator = expect.stringMatching(/^cli/);
      expect(actions).toEqual([
        { action: 'grant', operator, reason: 'Launch credit', amount_micros: 12_340_000 },
        { action: 'suspend', operator, reason: 'Abuse report', amount_micros: null },
        { action: 'resume', operator, reason: null, amount_micros: null },
      ]);
    },
    SCRIPT_TESTS_MS,
  );

  it(
    'answers usage errors with exit 2 and the usage, and refusals with exit 1, changing nothing',
    async () => {
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
      const actions = await withStore(({ db }) =>
        db.selectFrom('operator_actions').select('id').where('tenant_id', '=', tenantId).execute(),
      );
      expect(actions).toHaveLength(3);
    },
    SCRIPT_TESTS_MS,
  );

  it(
    'lists integrations and withdraws one from the catalog and brings it back',
    async () => {
      await withStore(({ db }) =>
        db
          .insertInto('integrations')
          .values([
            { provider: 'web-search', name: 'Web search' },
            { provider: 'speech', name: 'Speech', kind: 'speech_synthesis' },
          ])
          .execute(),
      );
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
      const enabled = await withStore(({ db }) =>
        db.selectFrom('integrations').select(['provider', 'enabled']).orderBy('provider').execute(),
      );
      expect(enabled).toEqual([
        { provider: 'speech', enabled: true },
        { provider: 'web-search', enabled: true },
      ]);
    },
    SCRIPT_TESTS_MS,
  );

  it('exits 3 while another process holds the embedded store', async () => {
    const store = await createStore({ dataDir, url: '' });
    try {
      const result = await admin('tenants');
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^The store cannot be opened: /);
    } finally {
      await store.close();
    }
  });
});
