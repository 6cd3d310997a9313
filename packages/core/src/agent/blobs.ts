/**
 * Blob storage behind one interface: bytes in, bytes out, streamed both ways. The store keeps
 * blobs by default (`StoreBlobs`: rows of at most `BLOB_CHUNK_BYTES`); `S3Blobs` puts them in an
 * S3-compatible bucket.
 *
 * @see docs/wire.md "Files"
 */
import type { Kysely } from 'kysely';
import type { ByteRange } from '../http/byte-range.js';
import type { Database } from '../store/database.js';

/** Where file bytes live. Keys are opaque to callers; a blob is written once and never changed. */
export interface BlobStore {
  readonly kind: 'store' | 's3';
  /**
   * Writes the bytes as they arrive and answers their count. When `body` throws (a size cap, a
   * dropped client), whatever was written is removed and the error goes on.
   */
  put(key: string, body: AsyncIterable<Uint8Array>, mediaType: string): Promise<{ size: number }>;
  /**
   * The bytes, read on demand, or only those of `range` (which must lie within the blob); null
   * when there is no such blob.
   */
  get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array> | null>;
  /** Removes the blob; a missing one is no error. */
  delete(key: string): Promise<void>;
}

/** Bytes per stored row: small enough to hold one in memory, large enough to keep rows few. */
export const BLOB_CHUNK_BYTES = 256 * 1024;

/**
 * Regroups a byte stream into pieces of exactly `size` bytes (the last one shorter), holding at
 * most one piece at a time.
 */
export async function* rechunk(body: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of body) {
    let rest = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (pendingBytes + rest.byteLength >= size) {
      const take = size - pendingBytes;
      pending.push(rest.subarray(0, take));
      yield Buffer.concat(pending, size);
      rest = rest.subarray(take);
      pending = [];
      pendingBytes = 0;
    }
    if (rest.byteLength > 0) {
      // Copied: the caller may reuse the chunk's memory once we ask for the next one.
      pending.push(Buffer.from(rest));
      pendingBytes += rest.byteLength;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes);
}

/** Blobs in the store: one row per chunk, written and read one chunk at a time. */
export class StoreBlobs implements BlobStore {
  readonly kind = 'store' as const;
  constructor(
    private readonly db: Kysely<Database>,
    private readonly chunkBytes = BLOB_CHUNK_BYTES,
  ) {}

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<{ size: number }> {
    let seq = 0;
    let size = 0;
    try {
      for await (const piece of rechunk(body, this.chunkBytes)) {
        await this.db.insertInto('wire_blob_chunks').values({ blob_key: key, seq, data: piece }).execute();
        seq += 1;
        size += piece.byteLength;
      }
      // An empty blob still has its first row, so `get` can tell it from a missing one.
      if (seq === 0) {
        await this.db
          .insertInto('wire_blob_chunks')
          .values({ blob_key: key, seq: 0, data: Buffer.alloc(0) })
          .execute();
      }
    } catch (error) {
      await this.delete(key).catch(() => {});
      throw error;
    }
    return { size };
  }

  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array> | null> {
    const first = await this.chunk(key, 0);
    if (!first) return null;
    // Every row but the last holds exactly as many bytes as the first (as it was written, whatever
    // the chunk size is now), so a range starts at a row found without reading those before it.
    const rowBytes = first.byteLength;
    let seq = range && rowBytes > 0 ? Math.floor(range.start / rowBytes) : 0;
    let at = seq * rowBytes;
    const end = range ? range.end + 1 : Number.POSITIVE_INFINITY;
    return new ReadableStream<Uint8Array>(
      {
        // Each pull enqueues a chunk or closes: a pull that did neither (an empty blob's one empty
        // chunk) would never be followed by another, and the reader would wait for ever.
        pull: async (controller) => {
          for (;;) {
            const data = at >= end ? null : seq === 0 ? first : await this.chunk(key, seq);
            seq += 1;
            if (!data) {
              controller.close();
              return;
            }
            const from = range ? Math.max(0, range.start - at) : 0;
            const piece = data.subarray(from, Math.min(data.byteLength, end - at));
            at += data.byteLength;
            if (piece.byteLength > 0) {
              controller.enqueue(piece);
              return;
            }
          }
        },
      },
      { highWaterMark: 0 },
    );
  }

  async delete(key: string): Promise<void> {
    await this.db.deleteFrom('wire_blob_chunks').where('blob_key', '=', key).execute();
  }

  private async chunk(key: string, seq: number): Promise<Uint8Array | null> {
    const row = await this.db
      .selectFrom('wire_blob_chunks')
      .select('data')
      .where('blob_key', '=', key)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row ? new Uint8Array(row.data) : null;
  }
}
