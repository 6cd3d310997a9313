/**
 * Blobs in an S3-compatible bucket (AWS S3, MinIO, R2 ...) through the AWS SDK's S3 client. A
 * blob that fits one part is one `PutObject`; a larger one is a multipart upload of
 * `S3_PART_BYTES` parts, so at most one part is held in memory. A failed upload is aborted.
 *
 * @see docs/wire.md "Files"
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { ByteRange } from '../http/byte-range.js';
import { type BlobStore, rechunk } from './blobs.js';

/** Bytes per multipart part (S3 requires at least 5 MiB for every part but the last). */
export const S3_PART_BYTES = 8 * 1024 * 1024;

export interface S3BlobsOptions {
  bucket: string;
  /** Key prefix, e.g. `service/files/` (default none). */
  prefix?: string;
  /** A client of your own, or the settings to build one (region, endpoint, credentials, forcePathStyle). */
  client?: S3Client;
  config?: S3ClientConfig;
}

export class S3Blobs implements BlobStore {
  readonly kind = 's3' as const;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;

  constructor(options: S3BlobsOptions) {
    this.#client = options.client ?? new S3Client(options.config ?? {});
    this.#bucket = options.bucket;
    this.#prefix = options.prefix ?? '';
  }

  async put(key: string, body: AsyncIterable<Uint8Array>, mediaType: string): Promise<{ size: number }> {
    const Key = this.#prefix + key;
    const parts = rechunk(body, S3_PART_BYTES)[Symbol.asyncIterator]();
    const first = await parts.next();
    const firstBytes = first.done ? Buffer.alloc(0) : first.value;
    const second = first.done ? first : await parts.next();
    if (second.done) {
      await this.#client.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key, Body: firstBytes, ContentType: mediaType }),
      );
      return { size: firstBytes.byteLength };
    }
    const { UploadId } = await this.#client.send(
      new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key, ContentType: mediaType }),
    );
    try {
      const done: { ETag: string; PartNumber: number }[] = [];
      let size = 0;
      const upload = async (bytes: Buffer) => {
        const PartNumber = done.length + 1;
        const { ETag } = await this.#client.send(
          new UploadPartCommand({ Bucket: this.#bucket, Key, UploadId, PartNumber, Body: bytes }),
        );
        done.push({ ETag: ETag ?? '', PartNumber });
        size += bytes.byteLength;
      };
      await upload(firstBytes);
      await upload(second.value);
      for (let next = await parts.next(); !next.done; next = await parts.next()) await upload(next.value);
      await this.#client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.#bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: done },
        }),
      );
      return { size };
    } catch (error) {
      await this.#client
        .send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key, UploadId }))
        .catch(() => {});
      throw error;
    }
  }

  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array> | null> {
    try {
      const answer = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#bucket,
          Key: this.#prefix + key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return answer.Body ? (answer.Body.transformToWebStream() as ReadableStream<Uint8Array>) : null;
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
  }
}
