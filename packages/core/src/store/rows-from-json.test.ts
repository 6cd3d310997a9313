/**
 * Many rows as one JSON parameter, on both stores: each row's own values, and the values every
 * row shares, bound once.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { columnList, rowsFromJson } from './rows-from-json.js';

const COLUMNS = { id: 'integer', label: 'text', doc: 'jsonb', at: 'timestamptz' };

for (const kind of STORE_KINDS) {
  describe(`rows from JSON (${kind})`, () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
      await sql`create temporary table json_rows (id integer, label text, doc jsonb, at timestamptz)`.execute(
        store.db,
      );
    });
    afterAll(async () => store?.dispose());

    it('inserts each row’s values, and a shared value in every row', async () => {
      const at = new Date('2026-11-27T10:00:00.123Z');
      const rows = [
        { id: 1, label: 'it’s "quoted"', doc: { a: [1, null] } },
        { id: 2, label: null, doc: {} },
      ];
      await sql`insert into json_rows ${columnList(COLUMNS)} ${rowsFromJson(COLUMNS, rows, { at })}`.execute(
        store.db,
      );
      const { rows: read } = await sql<{ id: number; label: string | null; doc: unknown; at: Date }>`
        select id, label, doc, at from json_rows order by id`.execute(store.db);
      expect(read.map((row) => ({ ...row, at: new Date(row.at).toISOString() }))).toEqual([
        { id: 1, label: 'it’s "quoted"', doc: { a: [1, null] }, at: at.toISOString() },
        { id: 2, label: null, doc: {}, at: at.toISOString() },
      ]);
    });
  });
}
