/**
 * Files a user uploaded (or attached to a chat message), scoped to their owner like every wire
 * row: another user's file is not found. The row holds the name, type and size; the bytes are a
 * blob in the `BlobStore`, streamed in and out.
 *
 * @see docs/wire.md "Files"
 */
import { randomBytes } from 'node:crypto';
import type { UIMessage } from 'ai';
import type { Kysely } from 'kysely';
import type { ByteRange } from '../http/byte-range.js';
import { storableText } from '../http/input-guard.js';
import type { Database } from '../store/database.js';
import { after, exactCreatedAt, type ListPosition, type Page, pageOf } from '../store/keyset.js';
import type { BlobStore } from './blobs.js';
import { newId } from './ids.js';

export interface FileSummary {
  id: string;
  name: string;
  mediaType: string;
  size: number;
  createdAt: string;
}

/** A file's row with its bytes, read on demand. */
export interface FileContent extends FileSummary {
  body: ReadableStream<Uint8Array>;
}

export const DEFAULT_MEDIA_TYPE = 'application/octet-stream';
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
const MAX_NAME_LENGTH = 255;

/** The bare media type (`image/png` of `image/png; charset=x`), lowercased; unknown shapes are octet-stream. */
export function normalizeMediaType(value: string | null | undefined): string {
  const bare = (value ?? '').split(';')[0]!.trim().toLowerCase();
  return MEDIA_TYPE.test(bare) ? bare : DEFAULT_MEDIA_TYPE;
}

/**
 * A file name safe to keep and show: the last path segment, control characters and separators
 * dropped, half a surrogate pair (a multipart name may be given in UTF-16) read as U+FFFD, as the
 * store keeps it, at most 255 characters; `file` when nothing is left.
 */
export function cleanFileName(value: string | null | undefined): string {
  const last = (value ?? '').split(/[/\\]/).at(-1) ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = storableText(last.replace(/[\u0000-\u001f\u007f]/g, '')).trim();
  return [...clean].slice(0, MAX_NAME_LENGTH).join('') || 'file';
}

const DATA_URL = /^data:([^,]*?)(;base64)?,(.*)$/s;

/** A data URL's media type and bytes; null when `url` is not a well-formed data URL. */
export function decodeDataUrl(url: string): { mediaType: string; bytes: Buffer } | null {
  const match = DATA_URL.exec(url);
  if (!match) return null;
  const [, type = '', base64, payload = ''] = match;
  if (base64) {
    if (!/^[A-Za-z0-9+/\s]*={0,2}$/.test(payload)) return null;
    return { mediaType: type, bytes: Buffer.from(payload, 'base64') };
  }
  try {
    return { mediaType: type, bytes: Buffer.from(decodeURIComponent(payload), 'utf8') };
  } catch {
    return null;
  }
}

export class FileStore {
  readonly #idInUrl: RegExp;

  /** `urlPrefix`: where the surface serves files (`/api/service/files/`); `<id>/content` follows. */
  constructor(
    private readonly db: Kysely<Database>,
    readonly blobs: BlobStore,
    private readonly urlPrefix: string,
  ) {
    const escaped = urlPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    this.#idInUrl = new RegExp(`^(?:https?://[^/]+)?${escaped}(fil_[A-Za-z0-9_-]{1,64})/content$`);
  }

  /** The URL a file's bytes are served at: what a chat message's file part keeps. */
  contentUrl(id: string): string {
    return `${this.urlPrefix}${id}/content`;
  }

  /** The file id a content URL names (absolute or path only), or null. */
  idInUrl(url: string): string | null {
    return this.#idInUrl.exec(url)?.[1] ?? null;
  }

  /**
   * A thread's messages as the model is to see them: file parts naming this owner's stored files
   * carry the files' bytes as data URLs (the stored thread keeps the URLs). A file since deleted
   * becomes a text note, so the turn goes on.
   */
  async inlineForModel(owner: string, messages: UIMessage[]): Promise<UIMessage[]> {
    const out: UIMessage[] = [];
    for (const message of messages) {
      if (!message.parts.some((p) => p.type === 'file' && this.idInUrl(p.url))) {
        out.push(message);
        continue;
      }
      const parts: UIMessage['parts'] = [];
      for (const part of message.parts) {
        const id = part.type === 'file' ? this.idInUrl(part.url) : null;
        if (part.type !== 'file' || !id) {
          parts.push(part);
          continue;
        }
        const file = await this.open(owner, id);
        if (!file) {
          parts.push({ type: 'text', text: `[attachment ${part.filename ?? id} was deleted]` });
          continue;
        }
        const bytes = Buffer.from(await new Response(file.body).arrayBuffer());
        parts.push({ ...part, url: `data:${file.mediaType};base64,${bytes.toString('base64')}` });
      }
      out.push({ ...message, parts });
    }
    return out;
  }

  /**
   * Streams `body` into a new blob, then records the file. A body that throws (past the size
   * cap, a dropped upload) leaves nothing behind.
   */
  async create(
    owner: string,
    input: { name: string; mediaType: string; body: AsyncIterable<Uint8Array> },
  ): Promise<FileSummary> {
    const id = newId('fil');
    // The key names no user: it is random, and the row says whose it is.
    const blobKey = `files/${randomBytes(18).toString('base64url')}`;
    const name = cleanFileName(input.name);
    const mediaType = normalizeMediaType(input.mediaType);
    const { size } = await this.blobs.put(blobKey, input.body, mediaType);
    try {
      const row = await this.db
        .insertInto('wire_files')
        .values({ owner, id, name, media_type: mediaType, size, blob_key: blobKey })
        .returning(['created_at'])
        .executeTakeFirstOrThrow();
      return { id, name, mediaType, size, createdAt: row.created_at.toISOString() };
    } catch (error) {
      await this.blobs.delete(blobKey).catch(() => {});
      throw error;
    }
  }

  /** The owner's files, newest first, after the position `before` names (a page's cursor). */
  async list(owner: string, options: { limit: number; before?: ListPosition }): Promise<Page<FileSummary>> {
    let query = this.db
      .selectFrom('wire_files')
      .select(['id', 'name', 'media_type', 'size', 'created_at', exactCreatedAt.as('cursor_at')])
      .where('owner', '=', owner);
    if (options.before) query = query.where(after(options.before));
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(options.limit + 1)
      .execute();
    return pageOf(rows, options.limit, summaryOf);
  }

  async get(owner: string, id: string): Promise<FileSummary | null> {
    const row = await this.row(owner, id);
    return row ? summaryOf(row) : null;
  }

  /**
   * The file with its bytes, or only those of `range` (which must lie within the file); null when
   * this owner has no such file (or its blob is gone).
   */
  async open(owner: string, id: string, range?: ByteRange): Promise<FileContent | null> {
    const row = await this.row(owner, id);
    if (!row) return null;
    const body = await this.blobs.get(row.blob_key, range);
    return body ? { ...summaryOf(row), body } : null;
  }

  /** Deletes the file and its blob; false when this owner has no such file. */
  async delete(owner: string, id: string): Promise<boolean> {
    const row = await this.db
      .deleteFrom('wire_files')
      .where('owner', '=', owner)
      .where('id', '=', id)
      .returning('blob_key')
      .executeTakeFirst();
    if (!row) return false;
    await this.blobs.delete(row.blob_key);
    return true;
  }

  private row(owner: string, id: string) {
    return this.db
      .selectFrom('wire_files')
      .select(['id', 'name', 'media_type', 'size', 'created_at', 'blob_key'])
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
  }
}

function summaryOf(row: {
  id: string;
  name: string;
  media_type: string;
  size: number;
  created_at: Date;
}): FileSummary {
  return {
    id: row.id,
    name: row.name,
    mediaType: row.media_type,
    size: Number(row.size),
    createdAt: row.created_at.toISOString(),
  };
}
