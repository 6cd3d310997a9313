import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BodyCutShortError } from '../http/body.js';
import type { ProviderConfig } from './providers.js';
import { type IncomingCall, readRequest, UnreadableBodyError } from './request.js';

const provider = { upstreamUrl: 'http://upstream.test', dialect: 'openai' } as ProviderConfig;

function call(body: string, subPath = '/v1/chat/completions'): IncomingCall {
  const headers = new Map([
    ['content-type', 'application/json'],
    ['content-length', String(Buffer.byteLength(body))],
  ]);
  return {
    method: 'POST',
    provider: 'llm',
    subPath,
    search: '',
    header: (name) => headers.get(name) ?? null,
    headers: () => headers.entries(),
    body: async function* () {
      yield new TextEncoder().encode(body);
    },
    clientAddress: () => '127.0.0.1',
    signal: new AbortController().signal,
    requestId: null,
  };
}

const forwardedBody = async (body: string, subPath?: string) =>
  (await readRequest(call(body, subPath), provider, 1024 * 1024))!.body as string;

describe('readRequest', () => {
  it('asks a streamed chat completion for its usage, keeping every field the caller sent', async () => {
    const sent = { model: 'demo-small', stream: true, messages: [{ role: 'user', content: 'Hi {' }] };
    const forwarded = JSON.parse(await forwardedBody(`  ${JSON.stringify(sent, null, 2)}`));
    expect(forwarded).toEqual({ ...sent, stream_options: { include_usage: true } });

    const withOptions = { ...sent, stream_options: { include_usage: false, extra: 1 } };
    expect(JSON.parse(await forwardedBody(JSON.stringify(withOptions)))).toEqual({
      ...sent,
      stream_options: { include_usage: true, extra: 1 },
    });
  });

  it('forwards the body as sent when it asks for usage already, or is not a streamed chat completion', async () => {
    const asking = JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true } });
    expect(await forwardedBody(asking)).toBe(asking);
    const unstreamed = JSON.stringify({ model: 'm', messages: [] });
    expect(await forwardedBody(unstreamed)).toBe(unstreamed);
    const embeddings = JSON.stringify({ model: 'm', stream: true });
    expect(await forwardedBody(embeddings, '/v1/embeddings')).toBe(embeddings);
  });

  it('asks for usage whichever way the upstream would read a streamed chat completion', async () => {
    const sent = { model: 'demo-small', stream: 'true', messages: [] };
    // A `stream` a Python upstream takes as true, on a path it decodes or ends with a slash.
    for (const [body, subPath] of [
      [sent, '/v1/chat/completions'],
      [{ ...sent, stream: 1 }, '/v1/chat/completions'],
      [{ ...sent, stream: true }, '/v1/chat/%63ompletions'],
      [{ ...sent, stream: true }, '/v1/chat/completions/'],
      [{ ...sent, stream: true }, '/v1/chat//completions'],
    ] as const) {
      expect(JSON.parse(await forwardedBody(JSON.stringify(body), subPath)), subPath).toMatchObject({
        stream_options: { include_usage: true },
      });
    }
    const unstreamed = JSON.stringify({ ...sent, stream: false });
    expect(await forwardedBody(unstreamed)).toBe(unstreamed);
  });

  it('refuses a body it cannot read to meter (compressed, not UTF-8), and reads one after a byte order mark', async () => {
    const withBytes = (bytes: Uint8Array, extra: Record<string, string> = {}): IncomingCall => {
      const headers = new Map([['content-type', 'application/json'], ...Object.entries(extra)]);
      return {
        ...call(''),
        header: (name) => headers.get(name) ?? null,
        body: async function* () {
          yield bytes;
        },
      };
    };
    const latin1 = Buffer.from(
      '{"model":"large","stream":true,"messages":[{"content":"caf\xe9"}]}',
      'latin1',
    );
    const utf16 = Buffer.from('{"model":"large","stream":true}', 'utf16le');
    const gzipped = gzipSync('{"model":"large","stream":true}');
    for (const [label, sent] of [
      ['not UTF-8', withBytes(latin1)],
      ['UTF-16', withBytes(utf16)],
      ['gzip', withBytes(gzipped, { 'content-encoding': 'gzip' })],
    ] as const) {
      await expect(readRequest(sent, provider, 1024 * 1024), label).rejects.toBeInstanceOf(
        UnreadableBodyError,
      );
    }
    // A byte order mark stays in what is forwarded; the body is read past it.
    const bom = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('{"model":"large","stream":true}'),
    ]);
    const request = (await readRequest(withBytes(bom), provider, 1024 * 1024))!;
    expect(request.model).toBe('large');
    expect(request.body).toBe(
      '\ufeff{"stream_options":{"include_usage":true},"model":"large","stream":true}',
    );
    // An empty model names none.
    expect((await readRequest(call(JSON.stringify({ model: '' })), provider, 1024))!.model).toBeNull();
  });

  it('reads the model and the output bound that admission holds by', async () => {
    const request = await readRequest(
      call(JSON.stringify({ model: 'demo-small', max_tokens: 50, max_completion_tokens: 80, n: 2 })),
      provider,
      1024,
    );
    expect(request).toMatchObject({ model: 'demo-small', maxOutputTokens: 160 });
  });
});

describe('readRequest, a body that breaks off', () => {
  it('says the body was cut short (the caller went away), not that something else failed', async () => {
    const broken: IncomingCall = {
      ...call('{}'),
      body: async function* () {
        yield new TextEncoder().encode('{"model":');
        throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
      },
    };
    await expect(readRequest(broken, provider, 1024)).rejects.toBeInstanceOf(BodyCutShortError);
  });
});
