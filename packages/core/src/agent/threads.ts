/**
 * Threads and their messages, always scoped to one owner (the principal's subject).
 * Messages are stored whole, as AI SDK UI messages, in order.
 */
import type { UIMessage } from 'ai';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../store/database.js';

export interface ThreadSummary {
  id: string;
  title: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ThreadDetail extends ThreadSummary {
  messages: UIMessage[];
}

const TITLE_LENGTH = 80;
/** How much of the text is read for a title: room for 80 characters of up to 32 code units each. */
const TITLE_SCAN = TITLE_LENGTH * 32;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * A title from the first user message: its text, whitespace collapsed, at most 80 characters
 * counted as a reader does (graphemes: an emoji is one, and is never cut in half).
 */
export function titleFrom(message: UIMessage): string | null {
  const text = message.parts
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!text) return null;
  // Only the start is segmented: segmenting takes time that grows with the square of the length
  // on some Node versions (a 1 MiB message would take hours), and a title needs 80 characters.
  const start = text.slice(0, TITLE_SCAN);
  const characters = Array.from(graphemes.segment(start), (s) => s.segment);
  if (characters.length <= TITLE_LENGTH && start.length === text.length) return text;
  return `${characters.slice(0, TITLE_LENGTH - 1).join('')}…`;
}

export class ThreadStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Newest first, by `updatedAt` as it is shown (to the millisecond), then by id: threads updated
   * in the same millisecond are all listed, each once, whatever the page size. `before` is the
   * last thread of the page before (its `updatedAt` and id), or an `updatedAt` alone: the threads
   * older than that.
   */
  async list(
    owner: string,
    options: { limit: number; before?: { updatedAt: string; id?: string } },
  ): Promise<ThreadSummary[]> {
    const shown = sql<Date>`date_trunc('milliseconds', updated_at)`;
    let query = this.db
      .selectFrom('wire_threads')
      .select(['id', 'title', 'created_at', 'updated_at'])
      .where('owner', '=', owner)
      .orderBy(shown, 'desc')
      .orderBy('id', 'desc')
      .limit(options.limit);
    const before = options.before;
    if (before) {
      const at = new Date(before.updatedAt);
      query = query.where(
        before.id === undefined
          ? sql<boolean>`${shown} < ${at}`
          : sql<boolean>`(${shown}, id) < (${at}, ${before.id})`,
      );
    }
    return (await query.execute()).map(summaryOf);
  }

  async get(owner: string, id: string): Promise<ThreadDetail | null> {
    const row = await this.db
      .selectFrom('wire_threads')
      .select(['id', 'title', 'created_at', 'updated_at'])
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return null;
    return { ...summaryOf(row), messages: await this.messages(owner, id) };
  }

  async exists(owner: string, id: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('wire_threads')
      .select('id')
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
    return row !== undefined;
  }

  async messages(owner: string, threadId: string): Promise<UIMessage[]> {
    const rows = await this.db
      .selectFrom('wire_messages')
      .select('message')
      .where('owner', '=', owner)
      .where('thread_id', '=', threadId)
      .orderBy('seq')
      .execute();
    return rows.map((row) => row.message as UIMessage);
  }

  /**
   * Appends a run's answer at the end of the thread and touches it, in one statement, while the
   * run's row exists: a run whose thread was deleted under it stores nothing, even when a new
   * thread took the same id since. The run row is locked until the message is in, so a delete
   * that lands meanwhile waits and takes the message with it. Appends to one thread never race:
   * a thread has at most one run in flight, and each run appends in turn. Appending a message
   * the thread already has changes nothing, so a write whose answer was lost may be sent again.
   */
  async append(owner: string, threadId: string, runId: string, message: UIMessage): Promise<void> {
    await sql`
      with run as (
        select id from wire_runs where id = ${runId} and owner = ${owner} and thread_id = ${threadId} for share
      ), touched as (
        update wire_threads set updated_at = now()
        where owner = ${owner} and id = ${threadId} and exists (select 1 from run)
        returning owner, id
      )
      insert into wire_messages (owner, thread_id, seq, id, role, message)
      select touched.owner, touched.id,
        (select coalesce(max(seq), 0) + 1 from wire_messages where owner = ${owner} and thread_id = ${threadId}),
        ${message.id}, ${message.role}, ${JSON.stringify(message)}::jsonb
      from touched
      where not exists (
        select 1 from wire_messages where owner = ${owner} and thread_id = ${threadId} and id = ${message.id}
      )`.execute(this.db);
  }

  /** Deletes the thread with its messages, runs and their chunks and approvals. */
  async delete(owner: string, id: string): Promise<boolean> {
    const deleted = await this.db
      .deleteFrom('wire_threads')
      .where('owner', '=', owner)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst();
    return deleted !== undefined;
  }
}

function summaryOf(row: {
  id: string;
  title: string | null;
  created_at: Date;
  updated_at: Date;
}): ThreadSummary {
  return {
    id: row.id,
    title: row.title,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
