/**
 * A seed's `sourceHash` (what `service sync` captured for the wrapped component): part of the
 * baseline's hash, so a host that changed the component and synced again drifts its people's
 * remixes although the seed document is the same; and `remixableHashes()` reading sync's file.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/apps/index.js';
import { remixableHashes } from '../../src/wire/index.js';
import { CompositionError } from '../../src/wire/options.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { connect } from './support/transports.js';
import { callerFor, testService } from './support/wire.js';

const document = {
  version: 1 as const,
  title: 'Orders card',
  queries: {},
  root: { component: 'Heading', props: { text: 'Your orders' } },
};
const SOURCE_A = 'a'.repeat(64);
const SOURCE_B = 'b'.repeat(64);
const seed = (sourceHash?: string) => ({
  component: 'OrdersCard',
  name: 'Orders card',
  document,
  ...(sourceHash ? { sourceHash } : {}),
});

describe('a seed with the source hash service sync captured', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('pglite');
  });
  afterAll(async () => {
    await store?.dispose();
  });

  /** The person's app as a service composed with `sourceHash` answers it. */
  async function appUnder(
    sourceHash: string | undefined,
    run: (as: ReturnType<typeof callerFor>) => Promise<unknown>,
  ) {
    const service = await testService(store, { apps: { seeds: [seed(sourceHash)] } });
    const http = await connect('express', service);
    try {
      return await run(callerFor(http.fetch, 'sourced'));
    } finally {
      await http.close();
      await service.close();
    }
  }

  it('drifts the remix when only the component source changed, and not when it is the same', async () => {
    const seeded = (await appUnder(SOURCE_A, async (as) => {
      const response = await as('/apps/seed', { method: 'POST', json: { component: 'OrdersCard' } });
      expect(response.status).toBe(201);
      return (await response.json()).app;
    })) as { id: string; baselineHash: string; drifted: boolean };
    expect(seeded.drifted).toBe(false);
    // The baseline names the source too: not the document's hash alone.
    expect(seeded.baselineHash).not.toBe(contentHash(document));

    const read = (sourceHash: string | undefined) =>
      appUnder(sourceHash, async (as) => (await (await as(`/apps/${seeded.id}`)).json()).app) as Promise<{
        drifted: boolean;
      }>;
    expect((await read(SOURCE_A)).drifted).toBe(false);
    expect((await read(SOURCE_B)).drifted).toBe(true);
    expect((await read(undefined)).drifted).toBe(true);
  });

  it('refuses a source hash that is not a sha256 in lowercase hex', async () => {
    for (const bad of ['A'.repeat(64), 'a'.repeat(63), 'not a hash']) {
      await expect(testService(store, { apps: { seeds: [seed(bad)] } })).rejects.toThrow(CompositionError);
    }
  });
});

describe('remixableHashes', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'remixables-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const write = (text: string) => {
    mkdirSync(join(dir, '.service'), { recursive: true });
    writeFileSync(join(dir, '.service', 'remixables.json'), text);
  };

  it('answers no hashes before the first sync', () => {
    expect(remixableHashes(join(dir, 'never-synced'))).toEqual({});
  });

  it('reads each wrapper’s hash from the file sync writes', () => {
    write(
      JSON.stringify({
        version: 1,
        remixables: {
          'orders-summary': { file: 'src/orders.tsx', line: 3, hash: SOURCE_A, source: '<Summary />' },
          'orders-header': { file: 'src/orders.tsx', line: 9, hash: SOURCE_B, source: '<Header />' },
        },
      }),
    );
    expect(remixableHashes(dir)).toEqual({ 'orders-summary': SOURCE_A, 'orders-header': SOURCE_B });
  });

  it('refuses a file that is not what sync writes', () => {
    for (const text of ['{', '[]', '{"version":1}', '{"remixables":{"x":{"hash":"short"}}}']) {
      write(text);
      expect(() => remixableHashes(dir)).toThrow(CompositionError);
    }
  });
});
