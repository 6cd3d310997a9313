import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkLayers, importsOf } from './check-layers.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const script = join(repoRoot, 'scripts/check-layers.ts');

let roots: string[] = [];
afterEach(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
  roots = [];
});

/** A throwaway repository holding `files` (paths relative to its root). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'layers-'));
  roots.push(root);
  const all = {
    'packages/core/package.json': JSON.stringify({
      exports: { '.': {}, './schemas': {}, './billing': {}, './wire': {} },
    }),
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('the layer check', () => {
  it('passes on the repository as it is', () => {
    expect(checkLayers(repoRoot)).toEqual([]);
  });

  it('fails pnpm lint on a deliberately wrong import, naming the allowed direction', () => {
    const root = tree({
      'packages/core/src/store/database.ts': "import type { WireTables } from '../wire/tables.js';\n",
      'packages/core/src/wire/tables.ts': 'export interface WireTables {}\n',
    });
    expect(checkLayers(root)).toEqual([
      'store/database.ts: imports wire/tables.ts against the layer map (store may import only internal)',
    ]);
    const run = spawnSync(process.execPath, ['--import', 'tsx', script, root], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('1 import(s) against the layer map');
  });

  it('lets a folder import the layers below it', () => {
    const root = tree({
      'packages/core/src/billing/ledger.ts':
        "import { x } from '../store/database.js';\nimport { y } from '../events/log.js';\nexport const z = x + y;\n",
      'packages/core/src/store/database.ts': 'export const x = 1;\n',
      'packages/core/src/events/log.ts': "import { x } from '../store/database.js';\nexport const y = x;\n",
    });
    expect(checkLayers(root)).toEqual([]);
  });

  it('refuses SQL in routes: no kysely, and only types from the store', () => {
    const root = tree({
      'packages/core/src/platform/routes/usage.ts': [
        "import { sql } from 'kysely';",
        "import type { Database } from '../../store/database.js';",
        "import { createStore } from '../../store/create-store.js';",
        'export { sql, createStore };',
        'export type D = Database;',
      ].join('\n'),
      'packages/core/src/store/database.ts': 'export interface Database {}\n',
      'packages/core/src/store/create-store.ts': 'export const createStore = 1;\n',
    });
    expect(checkLayers(root)).toEqual([
      'platform/routes/usage.ts: a route imports kysely; routes call domain services, which own the SQL',
      'platform/routes/usage.ts: a route imports store/create-store.ts; routes may import only types from the store',
    ]);
  });

  it('finds import cycles, type-only ones included', () => {
    const root = tree({
      'packages/core/src/wire/options.ts': "import type { O } from './overrides.js';\nexport type P = O;\n",
      'packages/core/src/wire/overrides.ts': "import type { P } from './options.js';\nexport type O = P;\n",
    });
    expect(checkLayers(root)).toEqual([
      'import cycle: wire/options.ts -> wire/overrides.ts -> wire/options.ts',
    ]);
  });

  it('refuses a folder that is not on the map', () => {
    const root = tree({ 'packages/core/src/misc/util.ts': 'export const a = 1;\n' });
    expect(checkLayers(root)).toEqual([
      'misc/util.ts: the folder "misc" is not on the layer map (scripts/check-layers.ts)',
    ]);
  });

  it('keeps packages on the public subpaths of core, and the SDK on its schemas', () => {
    const root = tree({
      'packages/express/src/index.ts':
        "import { a } from '@service/core/wire';\nimport { b } from '@service/core/internal';\nimport { c } from '../../core/src/wire/index.js';\n",
      'packages/sdk/src/client.ts':
        "import { s } from '@service/core/schemas';\nimport { t } from '@service/core/billing';\n",
      'packages/sdk/test/support/platform.ts':
        "import { boot } from '../../../core/test/support/platform.js';\n",
    });
    expect(checkLayers(root)).toEqual([
      'packages/express/src/index.ts: imports @service/core/internal, which is not a public subpath of @service/core',
      'packages/express/src/index.ts: imports ../../core/src/wire/index.js, outside its package; use a package name',
      'packages/sdk/src/client.ts: imports @service/core/billing; @service/sdk may import only @service/core/schemas',
    ]);
  });
});

describe('reading imports', () => {
  it('reads static, re-exported, multi-line, type-only and dynamic imports, and skips comments', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      'import {',
      '  c,',
      '  type D,',
      "} from './c.js';",
      "export * from './e.js';",
      "export type { F } from './f.js';",
      "import './side-effect.js';",
      "const g = await import('./g.js');",
      "// import { h } from './commented.js';",
      "/* import { i } from './block.js'; */",
    ].join('\n');
    expect(importsOf(source)).toEqual([
      { specifier: './a.js', typeOnly: false },
      { specifier: './b.js', typeOnly: true },
      { specifier: './c.js', typeOnly: false },
      { specifier: './e.js', typeOnly: false },
      { specifier: './f.js', typeOnly: true },
      { specifier: './side-effect.js', typeOnly: false },
      { specifier: './g.js', typeOnly: false },
    ]);
  });
});
