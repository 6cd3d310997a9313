/**
 * Anonymous sessions: a visitor nobody signed in yet gets a random cookie, and an owner derived
 * from its hash (`service:anonymous:<sha256>`), so their threads and files are kept like a
 * user's. On their first signed-in request the session is **adopted**: its threads (with their
 * messages and runs) and files move to the user; grants, approvals and the activity log stay
 * with the anonymous owner. A session is adopted once, also when two first requests race.
 *
 * @see docs/wire.md "Anonymous sessions"
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { newId } from './ids.js';

export const ANONYMOUS_PREFIX = 'service:anonymous:';

export interface Adoption {
  threads: number;
  files: number;
}

export class AnonymousSessions {
  constructor(private readonly db: Kysely<Database>) {}

  /** A new session: the cookie's value (random, 32 bytes) and the owner its rows get. */
  async create(): Promise<{ token: string; owner: string }> {
    const token = randomBytes(32).toString('base64url');
    const owner = ownerOf(token);
    await this.db.insertInto('wire_anonymous_sessions').values({ owner }).execute();
    return { token, owner };
  }

  /** The owner of a live (not yet adopted) session, or null for an unknown or retired cookie. */
  async owner(token: string): Promise<string | null> {
    const owner = ownerOf(token);
    const row = await this.db
      .selectFrom('wire_anonymous_sessions')
      .select('adopted_by')
      .where('owner', '=', owner)
      .executeTakeFirst();
    return row && row.adopted_by === null ? owner : null;
  }

  /**
   * Moves the session's threads and files to `user`, once: the claim and the moves are one
   * transaction, and a second claim finds the session taken (null). A thread id the user already
   * has gets a new id.
   */
  async adopt(token: string, user: string): Promise<Adoption | null> {
    const anonymous = ownerOf(token);
    return this.db.transaction().execute(async (trx) => {
      const claimed = await trx
        .updateTable('wire_anonymous_sessions')
        .set({ adopted_by: user, adopted_at: new Date() })
        .where('owner', '=', anonymous)
        .where('adopted_by', 'is', null)
        .returning('owner')
        .executeTakeFirst();
      if (!claimed) return null;
      const threads = await trx
        .selectFrom('wire_threads')
        .selectAll()
        .where('owner', '=', anonymous)
        .execute();
      for (const thread of threads) {
        const taken = await trx
          .selectFrom('wire_threads')
          .select('id')
          .where('owner', '=', user)
          .where('id', '=', thread.id)
          .executeTakeFirst();
        const id = taken ? newId('thr') : thread.id;
        await trx
          .insertInto('wire_threads')
          .values({
            owner: user,
            id,
            title: thread.title,
            created_at: thread.created_at,
            updated_at: thread.updated_at,
          })
          .execute();
        await trx
          .updateTable('wire_messages')
          .set({ owner: user, thread_id: id })
          .where('owner', '=', anonymous)
          .where('thread_id', '=', thread.id)
          .execute();
        await trx
          .updateTable('wire_runs')
          .set({ owner: user, thread_id: id })
          .where('owner', '=', anonymous)
          .where('thread_id', '=', thread.id)
          .execute();
        await trx
          .deleteFrom('wire_threads')
          .where('owner', '=', anonymous)
          .where('id', '=', thread.id)
          .execute();
      }
      const files = await trx
        .updateTable('wire_files')
        .set({ owner: user })
        .where('owner', '=', anonymous)
        .executeTakeFirst();
      return { threads: threads.length, files: Number(files.numUpdatedRows) };
    });
  }
}

/** The owner of a cookie: its hash, so the store never holds a usable cookie. */
function ownerOf(token: string): string {
  return ANONYMOUS_PREFIX + createHash('sha256').update(token).digest('base64url');
}
