/**
 * `S3Blobs` against a real S3-compatible server on loopback (s3rver: it speaks S3's REST API and
 * checks each request's SigV4 access key, though not the signature itself): single-part and
 * multipart uploads, streamed downloads, deletes, a failed upload aborted, an unknown key
 * refused; and the wire's files routes over it.
 *
 * @see docs/wire.md "Files"
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3_PART_BYTES, S3Blobs } from '../../src/agent/s3-blobs.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { callerFor, testService } from './support/wire.js';

const BUCKET = 'service-files';

async function* chunks(bytes: Uint8Array, size = 100_000): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function* failingAfter(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield* chunks(bytes);
  throw new Error('the upload dropped');
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('S3Blobs against an S3-compatible server', () => {
  let directory: string;
  let server: S3rver;
  let client: S3Client;
  let blobs: S3Blobs;
  let endpoint: string;

  /** Names of the commands the client sent, in order, and the byte range each asked for. */
  const sent: string[] = [];
  const ranges: (string | null)[] = [];
  const clientWith = (accessKeyId: string) =>
    new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey: 'S3RVER' },
    });

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 's3rver-'));
    server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory,
      configureBuckets: [{ name: BUCKET, configs: [] }],
    });
    const { port } = (await server.run()) as { port: number };
    endpoint = `http://127.0.0.1:${port}`;
    client = clientWith('S3RVER');
    client.middlewareStack.add(
      (next, context) => (args) => {
        sent.push(context.commandName ?? '');
        ranges.push((args.input as { Range?: string }).Range ?? null);
        return next(args);
      },
      { step: 'initialize' },
    );
    blobs = new S3Blobs({ bucket: BUCKET, prefix: 'wire/', client });
  });
  afterAll(async () => {
    client?.destroy();
    await server?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const read = async (key: string) => {
    const body = await blobs.get(key);
    return body ? Buffer.from(await new Response(body).arrayBuffer()) : null;
  };

  it('puts a small blob in one request and reads it back', async () => {
    const bytes = randomBytes(300_000);
    expect(await blobs.put('small', chunks(bytes), 'image/png')).toEqual({ size: bytes.length });
    expect(sha((await read('small'))!)).toBe(sha(bytes));
  });

  it('puts a blob larger than a part as a multipart upload', async () => {
    const bytes = randomBytes(S3_PART_BYTES * 2 + 12345);
    sent.length = 0;
    expect(await blobs.put('large', chunks(bytes, 1 << 20), 'application/octet-stream')).toEqual({
      size: bytes.length,
    });
    expect(sent).toEqual([
      'CreateMultipartUploadCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'CompleteMultipartUploadCommand',
    ]);
    expect(sha((await read('large'))!)).toBe(sha(bytes));
  });

  it('deletes a blob, and a missing blob reads as null', async () => {
    await blobs.put('gone', chunks(Buffer.from('bye')), 'text/plain');
    await blobs.delete('gone');
    expect(await blobs.get('gone')).toBeNull();
    await blobs.delete('never-was');
  });

  it('aborts a multipart upload whose body fails, leaving no object', async () => {
    const bytes = randomBytes(S3_PART_BYTES * 2 + 1000);
    sent.length = 0;
    await expect(blobs.put('broken', failingAfter(bytes), 'application/octet-stream')).rejects.toThrow(
      'the upload dropped',
    );
    expect(sent.at(-1)).toBe('AbortMultipartUploadCommand');
    expect(sent).not.toContain('CompleteMultipartUploadCommand');
    expect(await blobs.get('broken')).toBeNull();
  });

  it('signs its requests with its credentials: an unknown access key is refused by the server', async () => {
    const wrong = clientWith('NOT-A-KEY');
    try {
      const refused = new S3Blobs({ bucket: BUCKET, client: wrong });
      await expect(refused.put('x', chunks(Buffer.from('x')), 'text/plain')).rejects.toMatchObject({
        name: 'InvalidAccessKeyId',
      });
    } finally {
      wrong.destroy();
    }
  });

  describe('as the wire files blob store', () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore('pglite');
    });
    afterAll(async () => {
      await store?.dispose();
    });

    it('uploads into the bucket (nothing in the store) and downloads from it', async () => {
      const service = await testService(store, { files: { blobs } });
      try {
        const ada = callerFor((r) => service.fetch(r), 'ada');
        const bytes = randomBytes(200_000);
        const form = new FormData();
        form.set('file', new Blob([bytes], { type: 'application/pdf' }), 'report.pdf');
        const created = await ada('/files', {
          method: 'POST',
          headers: { 'x-service-upload': 'multipart' },
          body: form,
        });
        expect(created.status).toBe(201);
        const { file } = (await created.json()) as { file: { id: string } };
        const rows = await store.db.selectFrom('wire_blob_chunks').select('blob_key').execute();
        expect(rows).toEqual([]);
        const download = await ada(`/files/${file.id}/content`);
        expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="report.pdf"/);
        expect(sha(Buffer.from(await download.arrayBuffer()))).toBe(sha(bytes));
        // A range is asked of the bucket, not cut from the whole object here.
        sent.length = 0;
        ranges.length = 0;
        const partial = await ada(`/files/${file.id}/content`, { headers: { range: 'bytes=150000-150099' } });
        expect(partial.status).toBe(206);
        expect(partial.headers.get('content-range')).toBe(`bytes 150000-150099/${bytes.length}`);
        expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(150_000, 150_100))).toBe(true);
        expect(sent).toEqual(['GetObjectCommand']);
        expect(ranges).toEqual(['bytes=150000-150099']);
      } finally {
        await service.close();
      }
    });
  });
});
