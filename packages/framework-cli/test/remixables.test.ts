/**
 * `service sync` captures the host's `<Remixable>` wrappers into `.service/remixables.json`, on real
 * app folders: a capture, a change (drift), a removal (pruned), and exit 2 with `file:line:col` for
 * a wrapper it cannot capture, in any mode.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUILT, readJson, runCli, writeJson } from './support/cli.js';

interface Baseline {
  file: string;
  line: number;
  hash: string;
  source: string;
}
interface RemixablesFile {
  version: 1;
  remixables: Record<string, Baseline>;
}

let dir: string;

const sync = (...args: string[]) => runCli(['sync', ...args], { cwd: dir });
const remixables = () => readJson<RemixablesFile>(join(dir, '.service/remixables.json'));
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

function write(path: string, text: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), text);
}

/** A page wrapping an orders table; `cell` is what the table shows, `indent` how deep it sits. */
function ordersPage(cell: string, indent = ''): string {
  return [
    "import { Remixable } from '@service/react';",
    '',
    'export function Orders() {',
    '  return (',
    `${indent}    <Remixable id="orders-table">`,
    `${indent}      <table>`,
    `${indent}        <tr><td>${cell}</td></tr>`,
    `${indent}      </table>`,
    `${indent}    </Remixable>`,
    '  );',
    '}',
    '',
  ].join('\n');
}

const ORDERS_SOURCE = (cell: string) => `<table>\n  <tr><td>${cell}</td></tr>\n</table>`;

describe.skipIf(!BUILT)('service sync captures <Remixable> wrappers', () => {
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-fcli-remix-'));
    writeJson(join(dir, 'package.json'), { name: 'shop', private: true, type: 'module' });
    writeJson(join(dir, '.service/config.json'), {
      version: 1,
      framework: 'next',
      toolsModule: 'tools.ts',
      modelImport: '@/lib/ai',
      wiring: [],
    });
    write(
      'tools.ts',
      "export const tools = [{ name: 'list_orders', description: 'Lists orders.', input: { type: 'object' }, execute: () => [] }];\n",
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('captures a wrapper: its id, file, line, the wrapped source and its sha256', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    // Aliased and namespace imports count; a same-named component of the host's own does not.
    write(
      'src/components/stats.jsx',
      [
        "import * as Service from '@service/react';",
        "import { Remixable as Wrap } from '@service/react';",
        'export const Stats = () => (',
        '  <>',
        "    <Service.Remixable id={'revenue'}><Stat value={1} /></Service.Remixable>",
        '    <Wrap id="customers">',
        '      <List />',
        '    </Wrap>',
        '  </>',
        ');',
        '',
      ].join('\n'),
    );
    write(
      'src/components/local.tsx',
      "import { Remixable } from './mine';\nexport const X = () => <Remixable id={dynamic}><p /></Remixable>;\n// @service/react\n",
    );
    // Dependencies and build output are not the host's source.
    write(
      'node_modules/lib/index.jsx',
      'import { Remixable } from \'@service/react\';\n<Remixable id="dep"><p /></Remixable>;\n',
    );

    const result = await sync();
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('remixables: 3 captured -> .service/remixables.json');
    const file = remixables();
    expect(file).toEqual({
      version: 1,
      remixables: {
        customers: {
          file: 'src/components/stats.jsx',
          line: 6,
          hash: sha256('<List />'),
          source: '<List />',
        },
        'orders-table': {
          file: 'src/app/orders/page.tsx',
          line: 5,
          hash: sha256(ORDERS_SOURCE('{order.id}')),
          source: ORDERS_SOURCE('{order.id}'),
        },
        revenue: {
          file: 'src/components/stats.jsx',
          line: 5,
          hash: sha256('<Stat value={1} />'),
          source: '<Stat value={1} />',
        },
      },
    });
    expect(Object.keys(file.remixables)).toEqual(['customers', 'orders-table', 'revenue']);
  });

  it('reports a changed wrapper as drift and records its new hash; re-indenting is no change', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    expect((await sync()).code).toBe(0);
    const before = remixables().remixables['orders-table']!.hash;

    // Moved two spaces deeper with Windows line endings: the same normalized text, no drift.
    write('src/app/orders/page.tsx', ordersPage('{order.id}', '  ').replace(/\n/g, '\r\n'));
    const moved = await sync('--json');
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout).report.remixables.changed).toEqual([]);
    expect(remixables().remixables['orders-table']!.hash).toBe(before);

    write('src/app/orders/page.tsx', ordersPage('{order.total}'));
    const changed = await sync();
    expect(changed.code).toBe(0);
    expect(changed.stdout).toContain(
      'changed  remixable orders-table (src/app/orders/page.tsx:5): remixes of it will report drift and can be rebased',
    );
    const after = remixables().remixables['orders-table']!;
    expect(after.hash).toBe(sha256(ORDERS_SOURCE('{order.total}')));
    expect(after.hash).not.toBe(before);

    // Reported once: the next sync compares with the baseline it just wrote.
    const again = await sync();
    expect(again.stdout).not.toContain('changed  remixable');
  });

  it('prunes a wrapper that is gone, and keeps an emptied file', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    write(
      'src/app/stats.tsx',
      'import { Remixable } from \'@service/react\';\nexport const S = () => <Remixable id="revenue"><Stat /></Remixable>;\n',
    );
    expect((await sync()).code).toBe(0);
    expect(Object.keys(remixables().remixables)).toEqual(['orders-table', 'revenue']);

    rmSync(join(dir, 'src/app/stats.tsx'));
    const pruned = await sync();
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain('removed  remixable revenue: its wrapper is gone, pruned');
    expect(Object.keys(remixables().remixables)).toEqual(['orders-table']);

    // The wrapper unwrapped: the component stays, the baseline goes.
    write('src/app/orders/page.tsx', 'export function Orders() { return <table />; }\n');
    expect((await sync()).code).toBe(0);
    expect(remixables()).toEqual({ version: 1, remixables: {} });
  });

  it('writes no file for an app without wrappers', async () => {
    write('src/app/page.tsx', 'export default () => <main />;\n');
    expect((await sync()).code).toBe(0);
    expect(existsSync(join(dir, '.service/remixables.json'))).toBe(false);
  });

  it('exits 2 with file:line:col on an id that is not a string literal, and writes nothing', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    expect((await sync()).code).toBe(0);
    const written = readFileSync(join(dir, '.service/remixables.json'), 'utf8');
    write(
      'src/app/orders/page.tsx',
      `${ordersPage('{order.total}')}export const Other = ({ key }) => (\n  <div>\n    <Remixable id={key}><p /></Remixable>\n  </div>\n);\n`,
    );
    for (const args of [[], ['--strict']]) {
      const result = await sync(...args);
      expect(result.code, result.stdout).toBe(2);
      expect(result.stdout).toContain(
        'src/app/orders/page.tsx:14:5: <Remixable> id must be a string literal',
      );
    }
    // Neither the baselines nor the catalog move while a wrapper is unresolved.
    expect(readFileSync(join(dir, '.service/remixables.json'), 'utf8')).toBe(written);
    write('tools.ts', 'export const tools = [];\n');
    expect((await sync()).code).toBe(2);
    expect(readJson<{ tools: unknown[] }>(join(dir, '.service/catalog.json')).tools).toHaveLength(1);
  });

  it('exits 2 on a duplicated id, naming both places, and on a wrapper with no children', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    write(
      'src/app/other.tsx',
      [
        "import { Remixable } from '@service/react';",
        'export const Other = () => (',
        '  <div>',
        '    <Remixable id="orders-table"><List /></Remixable>',
        '    <Remixable id="empty" />',
        '    <Remixable id="blank">   </Remixable>',
        '  </div>',
        ');',
        '',
      ].join('\n'),
    );
    const result = await sync();
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      'src/app/other.tsx:4:5: <Remixable> id "orders-table" is used twice (first at src/app/orders/page.tsx:5:5)',
    );
    expect(result.stdout).toContain('src/app/other.tsx:5:5: <Remixable id="empty"> wraps nothing');
    expect(result.stdout).toContain('src/app/other.tsx:6:5: <Remixable id="blank"> wraps nothing');
    expect(existsSync(join(dir, '.service/remixables.json'))).toBe(false);
  });

  it('--json reports { captured, changed, removed, problems }', async () => {
    write('src/app/orders/page.tsx', ordersPage('{order.id}'));
    write(
      'src/app/stats.tsx',
      'import { Remixable } from \'@service/react\';\nexport const S = () => <Remixable id="revenue"><Stat /></Remixable>;\n',
    );
    const first = await sync('--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).report.remixables).toEqual({
      captured: ['orders-table', 'revenue'],
      changed: [],
      removed: [],
      problems: [],
    });

    const before = remixables().remixables['orders-table']!.hash;
    write('src/app/orders/page.tsx', ordersPage('{order.total}'));
    write(
      'src/app/stats.tsx',
      "import { Remixable } from '@service/react';\nexport const S = ({ ids }) => <Remixable id={ids.revenue}><Stat /></Remixable>;\n",
    );
    const second = await sync('--json');
    expect(second.code).toBe(2);
    const body = JSON.parse(second.stdout);
    expect(body).toMatchObject({ ok: false, exitCode: 2, report: { written: false } });
    expect(body.report.remixables).toEqual({
      captured: ['orders-table'],
      changed: [
        {
          id: 'orders-table',
          file: 'src/app/orders/page.tsx',
          line: 5,
          previousHash: before,
          hash: sha256(ORDERS_SOURCE('{order.total}')),
        },
      ],
      removed: ['revenue'],
      problems: [
        {
          file: 'src/app/stats.tsx',
          line: 2,
          column: 31,
          message: expect.stringMatching(/^<Remixable> id must be a string literal/),
        },
      ],
    });
  });
});
