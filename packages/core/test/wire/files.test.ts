/**
 * Files over the wire, through a real Express server on loopback: multipart and raw uploads
 * streamed into the store's chunked blobs, downloads with their headers, per-user isolation, the
 * size limit (refused unread when declared, cut off when streamed), list and delete.
 *
 * @see docs/wire.md "Files"
 */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExpressServer, serveWithExpress } from '../../../express/test/support/serve.js';
import { BLOB_CHUNK_BYTES } from '../../src/agent/blobs.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type Caller, callerFor, collectingLogger, eventually, testService } from './support/wire.js';

const MAX_FILE_BYTES = 2 * 1024 * 1024;

for (const kind of STORE_KINDS) {
  describe(`wire files (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let server: ExpressServer;
    let ada: Caller;
    let bob: Caller;

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { files: { maxBytes: MAX_FILE_BYTES } });
      server = await serveWithExpress(service);
      ada = callerFor((r) => server.fetch(r), 'ada');
      bob = callerFor((r) => server.fetch(r), 'bob');
    });
    afterAll(async () => {
      await server?.close();
      await service?.close();
      await store?.dispose();
    });

    const chunkRows = async () =>
      Number(
        (
          await store.db
            .selectFrom('wire_blob_chunks')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    function multipart(bytes: Uint8Array<ArrayBuffer>, name: string, type: string): FormData {
      const form = new FormData();
      form.set('note', 'ignored');
      form.set('file', new Blob([bytes], { type }), name);
      return form;
    }

    it('uploads a multipart file well above 75 KB, in 256 KiB rows, and downloads it byte for byte', async () => {
      const bytes = randomBytes(BLOB_CHUNK_BYTES * 4 + 1234);
      const before = await chunkRows();
      const created = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart' },
        body: multipart(bytes, 'photo.png', 'image/png'),
      });
      expect(created.status).toBe(201);
      const { file } = (await created.json()) as { file: Record<string, unknown> };
      expect(file).toMatchObject({ name: 'photo.png', mediaType: 'image/png', size: bytes.length });
      expect(file.id).toMatch(/^fil_/);
      expect(await chunkRows()).toBe(before + 5);

      const download = await ada(`/files/${file.id}/content`);
      expect(download.status).toBe(200);
      expect(download.headers.get('content-type')).toBe('image/png');
      expect(download.headers.get('content-disposition')).toBe(
        `inline; filename="photo.png"; filename*=UTF-8''photo.png`,
      );
      expect(download.headers.get('x-content-type-options')).toBe('nosniff');
      expect(download.headers.get('content-security-policy')).toContain('sandbox');
      const got = Buffer.from(await download.arrayBuffer());
      expect(createHash('sha256').update(got).digest('hex')).toBe(
        createHash('sha256').update(bytes).digest('hex'),
      );

      const forced = await ada(`/files/${file.id}/content?download`);
      expect(forced.headers.get('content-disposition')).toMatch(/^attachment; /);
      await forced.body?.cancel();
    });

    it('serves one byte range (206), across rows, and resumes only the same file (If-Range)', async () => {
      const bytes = randomBytes(BLOB_CHUNK_BYTES * 3 + 100);
      const created = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'raw', 'content-type': 'video/mp4' },
        body: bytes,
      });
      const { file } = (await created.json()) as { file: { id: string } };
      const size = bytes.length;
      const get = (headers: Record<string, string>) => ada(`/files/${file.id}/content`, { headers });

      const whole = await get({});
      expect(whole.status).toBe(200);
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      const etag = whole.headers.get('etag');
      expect(etag).toBe(`"${file.id}"`);
      await whole.body?.cancel();

      const row = BLOB_CHUNK_BYTES;
      for (const [header, start, end] of [
        ['bytes=0-9', 0, 9],
        [`bytes=${row - 5}-${row + 4}`, row - 5, row + 4], // the end of one row and the start of the next
        [`bytes=${row}-${3 * row - 1}`, row, 3 * row - 1], // two whole rows, none before or after
        [`bytes=${row + 7}-`, row + 7, size - 1], // from inside a row to the end
        ['bytes=-100', size - 100, size - 1], // the last 100 bytes: the short last row
        [`bytes=-${size + 50}`, 0, size - 1], // a suffix longer than the file: all of it
        [`bytes=${size - 1}-${size + 1000}`, size - 1, size - 1], // an end past the file: cut to it
        ['BYTES = 5 - 5', 5, 5],
      ] as const) {
        const partial = await get({ range: header, 'if-range': etag ?? '' });
        expect(partial.status, header).toBe(206);
        expect(partial.headers.get('content-range'), header).toBe(`bytes ${start}-${end}/${size}`);
        expect(partial.headers.get('content-length'), header).toBe(String(end - start + 1));
        expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(start, end + 1)), header).toBe(
          true,
        );
      }

      // Ranges this server does not serve (several, another unit, malformed, backwards) get the
      // whole file, as does a resume whose If-Range names another version.
      for (const headers of <Record<string, string>[]>[
        { range: 'bytes=0-1,5-6' },
        { range: 'items=0-1' },
        { range: 'bytes=abc' },
        { range: 'bytes=9-3' },
        { range: 'bytes=0-9', 'if-range': '"fil_other"' },
        { range: 'bytes=0-9', 'if-range': 'Tue, 01 Dec 2026 00:00:00 GMT' },
      ]) {
        const full = await get(headers);
        expect(full.status, JSON.stringify(headers)).toBe(200);
        expect(full.headers.get('content-range')).toBeNull();
        expect((await full.arrayBuffer()).byteLength).toBe(size);
      }

      for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=-0']) {
        const refused = await get({ range });
        expect(refused.status, range).toBe(416);
        expect(refused.headers.get('content-range')).toBe(`bytes */${size}`);
        expect((await refused.json()).error.code).toBe('range_not_satisfiable');
      }
      // Another user's file is not found, range or no range.
      const theirs = await bob(`/files/${file.id}/content`, { headers: { range: 'bytes=0-9' } });
      expect(theirs.status).toBe(404);
      await theirs.body?.cancel();
    });

    it('takes a raw upload named by its header, and never shows script-capable types inline', async () => {
      const created = await ada('/files', {
        method: 'POST',
        headers: {
          'x-service-upload': 'raw',
          'content-type': 'text/html; charset=utf-8',
          'x-service-file-name': encodeURIComponent('Résumé "v2".html'),
        },
        body: '<script>alert(1)</script>',
      });
      expect(created.status).toBe(201);
      const { file } = (await created.json()) as { file: { id: string; name: string; mediaType: string } };
      expect(file).toMatchObject({ name: 'Résumé "v2".html', mediaType: 'text/html' });
      const download = await ada(`/files/${file.id}/content`);
      expect(download.headers.get('content-type')).toBe('text/html');
      expect(download.headers.get('content-disposition')).toBe(
        `attachment; filename="R_sum_ _v2_.html"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22v2%22.html`,
      );
      expect(await download.text()).toBe('<script>alert(1)</script>');
    });

    it("keeps each user's files to themselves: another user's file is a 404 everywhere", async () => {
      const created = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'raw', 'content-type': 'text/plain' },
        body: 'secret',
      });
      const { file } = (await created.json()) as { file: { id: string } };
      for (const [path, init] of [
        [`/files/${file.id}`, {}],
        [`/files/${file.id}/content`, {}],
        [`/files/${file.id}`, { method: 'DELETE', json: {} }],
      ] as const) {
        const answer = await bob(path, init);
        expect(answer.status).toBe(404);
        expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_found');
      }
      const bobs = (await (await bob('/files')).json()) as { files: unknown[] };
      expect(bobs.files).toEqual([]);
      expect((await ada(`/files/${file.id}`)).status).toBe(200);
    });

    it('lists newest first with a cursor, and deletes a file with its blob', async () => {
      const ids: string[] = [];
      for (const text of ['one', 'two', 'three']) {
        const created = await callerFor((r) => server.fetch(r), 'lister')('/files', {
          method: 'POST',
          headers: { 'x-service-upload': 'raw', 'content-type': 'text/plain' },
          body: text,
        });
        ids.push(((await created.json()) as { file: { id: string } }).file.id);
      }
      const lister = callerFor((r) => server.fetch(r), 'lister');
      const page1 = (await (await lister('/files?limit=2')).json()) as {
        files: { id: string }[];
        nextBefore: string | null;
      };
      expect(page1.files.map((f) => f.id)).toEqual([ids[2], ids[1]]);
      // The page's cursor is a place in the list, not a row: deleting its file loses nothing.
      await lister(`/files/${ids[1]}`, { method: 'DELETE', json: {} });
      const page2 = (await (await lister(`/files?limit=2&before=${page1.nextBefore}`)).json()) as {
        files: { id: string }[];
        nextBefore: string | null;
      };
      expect(page2.files.map((f) => f.id)).toEqual([ids[0]]);
      expect(page2.nextBefore).toBeNull();
      // A cursor the list never issued is refused, not read as an empty last page.
      for (const before of ['garbage', '', 'run_AAAAAAAAAAAAAAAAAAAAAA', `${ids[0]}x`, ids[0]!]) {
        const response = await lister(`/files?before=${encodeURIComponent(before)}`);
        expect(response.status, before).toBe(400);
        const { error } = (await response.json()) as { error: { code: string; message: string } };
        expect(error).toMatchObject({
          code: 'validation_failed',
          message: expect.stringContaining('before'),
        });
      }

      const rows = await chunkRows();
      const deleted = await lister(`/files/${ids[0]}`, { method: 'DELETE', json: {} });
      expect(await deleted.json()).toEqual({ deleted: true, id: ids[0] });
      expect(await chunkRows()).toBe(rows - 1);
      expect((await lister(`/files/${ids[0]}/content`)).status).toBe(404);
    });

    it('refuses a declared size past the limit at once, without reading the body', async () => {
      const url = new URL(`${server.url}/api/service/files`);
      const answer = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
        const req = httpRequest(url, {
          method: 'POST',
          headers: {
            'x-test-user': 'ada',
            'x-service-upload': 'raw',
            'content-type': 'application/octet-stream',
            'content-length': String(100 * 1024 * 1024),
          },
        });
        let sent = 0;
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body, sent });
            req.destroy();
          });
        });
        req.on('error', reject);
        // Only the first 64 KiB of the declared 100 MiB are ever sent.
        sent += 64 * 1024;
        req.write(Buffer.alloc(64 * 1024));
      });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
    });

    it('cuts off a streamed upload at the limit and keeps nothing of it', async () => {
      const rows = await chunkRows();
      const big = randomBytes(MAX_FILE_BYTES + 1);
      const raw = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'raw', 'content-type': 'application/octet-stream' },
        body: new Blob([big]).stream(),
        duplex: 'half',
      } as RequestInit);
      expect(raw.status).toBe(413);
      const multi = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart' },
        body: multipart(big, 'big.bin', 'application/octet-stream'),
      });
      expect(multi.status).toBe(413);
      expect(((await multi.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
      expect(await chunkRows()).toBe(rows);
    });

    it('keeps a multipart file name in UTF-8, and reads the file part after one of another field', async () => {
      const form = new FormData();
      form.set('thumb', new Blob(['not this one'], { type: 'text/plain' }), 'thumb.txt');
      form.set('file', new Blob(['bonjour'], { type: 'text/plain' }), 'résumé 日本.txt');
      const created = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart' },
        body: form,
      });
      expect(created.status).toBe(201);
      const { file } = (await created.json()) as { file: { id: string; name: string; size: number } };
      expect(file).toMatchObject({ name: 'résumé 日本.txt', size: 7 });
      const listed = (await (await ada('/files')).json()) as { files: Array<{ id: string; name: string }> };
      expect(listed.files.find((f) => f.id === file.id)?.name).toBe('résumé 日本.txt');
    });

    it('says why a multipart form brought no file: a plain field of that name, or too many parts before it', async () => {
      const rows = await chunkRows();
      const send = (form: FormData) =>
        ada('/files', { method: 'POST', headers: { 'x-service-upload': 'multipart' }, body: form });
      const plain = new FormData();
      plain.set('file', 'just text');
      const noFile = await send(plain);
      expect(noFile.status).toBe(400);
      expect(((await noFile.json()) as { error: { message: string } }).error.message).toContain(
        'the part named "file" holds no file',
      );
      // Forty parts are read; the file part after fifty fields never is, and the answer says so.
      const crowded = new FormData();
      for (let i = 0; i < 50; i++) crowded.set(`note${i}`, 'v');
      crowded.set('file', new Blob(['late']), 'late.txt');
      const late = await send(crowded);
      expect(late.status).toBe(400);
      expect(((await late.json()) as { error: { message: string } }).error.message).toContain(
        'the form has more than 40 parts',
      );
      // Within the limit, the file after the fields is read.
      const roomy = new FormData();
      for (let i = 0; i < 30; i++) roomy.set(`note${i}`, 'v');
      roomy.set('file', new Blob(['in time']), 'in-time.txt');
      expect((await send(roomy)).status).toBe(201);
      expect(await chunkRows()).toBe(rows + 1);
    });

    it('answers a name that is not well-formed text as it is kept: half an emoji becomes U+FFFD', async () => {
      // RFC 5987 lets a part name its file in UTF-16: these bytes are a high surrogate alone, then "x.txt".
      const body = [
        '--cut',
        `Content-Disposition: form-data; name="file"; filename*=utf-16le''%3D%D8x%00.%00t%00x%00t%00`,
        'Content-Type: text/plain',
        '',
        'abc',
        '--cut--',
        '',
      ].join('\r\n');
      const created = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart', 'content-type': 'multipart/form-data; boundary=cut' },
        body,
      });
      expect(created.status).toBe(201);
      const { file } = (await created.json()) as { file: { id: string; name: string } };
      expect(file.name).toBe('\ufffdx.txt');
      const shown = (await (await ada(`/files/${file.id}`)).json()) as { file: { name: string } };
      expect(shown.file.name).toBe(file.name);
      const content = await ada(`/files/${file.id}/content`);
      expect(content.status).toBe(200);
      expect(content.headers.get('content-disposition')).toContain("filename*=UTF-8''%EF%BF%BDx.txt");
    });

    it('keeps nothing of an upload whose client drops midway', async () => {
      const rows = await chunkRows();
      const url = new URL(`${server.url}/api/service/files`);
      for (const mode of ['raw', 'multipart'] as const) {
        const boundary = 'dropped-boundary';
        await new Promise<void>((resolve) => {
          const req = httpRequest(url, {
            method: 'POST',
            headers: {
              'x-test-user': 'ada',
              'x-service-upload': mode,
              'content-type':
                mode === 'raw' ? 'application/octet-stream' : `multipart/form-data; boundary=${boundary}`,
              'content-length': String(1024 * 1024),
            },
          });
          req.on('error', () => resolve());
          if (mode === 'multipart') {
            req.write(
              `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n` +
                'Content-Type: application/octet-stream\r\n\r\n',
            );
          }
          // More than one stored row, then the connection is gone.
          req.write(Buffer.alloc(BLOB_CHUNK_BYTES + 1000), () => setTimeout(() => req.destroy(), 200));
          req.on('close', () => resolve());
        });
      }
      await eventually(async () => ((await chunkRows()) === rows ? true : undefined));
      expect(await chunkRows()).toBe(rows);
    });

    it('refuses uploads a cross-site form could send, and malformed ones, with clear 4xx', async () => {
      const form = await ada('/files', {
        method: 'POST',
        body: multipart(Buffer.from('x'), 'a.txt', 'text/plain'),
      });
      expect(form.status).toBe(415);
      const noFile = new FormData();
      noFile.set('other', 'x');
      const missing = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart' },
        body: noFile,
      });
      expect(missing.status).toBe(400);
      expect(((await missing.json()) as { error: { message: string } }).error.message).toContain('"file"');
      const notMultipart = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'multipart', 'content-type': 'text/plain' },
        body: 'x',
      });
      expect(notMultipart.status).toBe(400);
      const badName = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'raw', 'x-service-file-name': '%E0%A4%A' },
        body: 'x',
      });
      expect(badName.status).toBe(400);
      // A JSON body passes the gate, but an upload still says how its body is shaped.
      for (const headers of [
        { 'content-type': 'application/json' } as Record<string, string>,
        { 'content-type': 'application/json', 'x-service-upload': 'base64' },
      ]) {
        const unsaid = await ada('/files', { method: 'POST', headers, body: '{"a":1}' });
        expect(unsaid.status).toBe(400);
        const { error } = (await unsaid.json()) as { error: { code: string; message: string } };
        expect(error.code).toBe('validation_failed');
        expect(error.message).toContain('X-Service-Upload');
      }
      const anonymous = await callerFor((r) => server.fetch(r), null)('/files');
      expect(anonymous.status).toBe(403);
    });
  });
}

describe('an upload whose client drops midway', () => {
  it('is not logged as the store being away', async () => {
    const store = await openTestStore('pglite');
    const { logger, said: warnings } = collectingLogger();
    const service = await testService(store, { logger });
    const server = await serveWithExpress(service);
    try {
      for (const mode of ['raw', 'multipart'] as const) {
        await new Promise<void>((resolve) => {
          const req = httpRequest(new URL(`${server.url}/api/service/files`), {
            method: 'POST',
            headers: {
              'x-test-user': 'ada',
              'x-service-upload': mode,
              'content-type': mode === 'raw' ? 'text/plain' : 'multipart/form-data; boundary=cut',
              'content-length': '100',
            },
          });
          req.on('error', () => resolve());
          req.on('close', () => resolve());
          req.write(
            mode === 'raw'
              ? 'abc'
              : '--cut\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc',
            () => setTimeout(() => req.destroy(), 100),
          );
        });
      }
      // The server has had the drops well before a request sent after them is answered.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await callerFor((r) => server.fetch(r), 'ada')('/files')).status).toBe(200);
      expect(warnings).toEqual([]);
    } finally {
      await server.close();
      await service.close();
      await store.dispose();
    }
  });
});

describe('wire files switched off', () => {
  it('answers 404 route_not_found for the files routes', async () => {
    const store = await openTestStore('pglite');
    const service = await testService(store, { files: false });
    try {
      const answer = await callerFor((r) => service.fetch(r), 'ada')('/files');
      expect(answer.status).toBe(404);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('route_not_found');
    } finally {
      await service.close();
      await store.dispose();
    }
  });
});
