import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { CliError } from './cli-error.js';
import { KEY_PATTERN } from './config.js';
import type { InputStream } from './io.js';

/** What the bootstrap page posts to `/done`. */
export interface LoginPayload {
  apiKey: string;
  tenantId: string;
  appId: string | null;
  email: string | null;
  issuedAt: string;
}

export interface LoopbackOptions {
  /** The platform's origin: the only page allowed to post here. */
  apiOrigin: string;
  timeoutMs: number;
  /** Read pasted login codes here too (when the browser cannot reach the listener). */
  pasteFrom?: InputStream;
  /** Told about a pasted line that is neither a login code nor a whole key. */
  onBadPaste?(): void;
  /**
   * A pasted whole `service_sk_` key (a CLI key made on the dashboard): resolves its payload once
   * the platform vouches for it, else null (having said why) and the wait goes on.
   */
  onPastedKey?(key: string): Promise<LoginPayload | null>;
}

export interface LoopbackListener {
  /** `http://127.0.0.1:<port>/done` */
  callbackUrl: string;
  /** Resolves with the first valid payload; rejects when the timer runs out. */
  payload: Promise<LoginPayload>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024;

/** The payload in a body, or the reason it is refused. */
export function readPayload(value: unknown): LoginPayload | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'Body must be a JSON object';
  const body = value as Record<string, unknown>;
  // The whole key's shape: a bare prefix (or anything after it) would be stored as the key.
  if (typeof body.apiKey !== 'string' || !KEY_PATTERN.test(body.apiKey)) {
    return 'Body must carry apiKey (a service_sk_ key)';
  }
  if (typeof body.tenantId !== 'string' || body.tenantId === '') return 'Body must carry tenantId';
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
  return {
    apiKey: body.apiKey,
    tenantId: body.tenantId,
    appId: text(body.appId),
    email: text(body.email),
    issuedAt: text(body.issuedAt) ?? new Date().toISOString(),
  };
}

/**
 * Listens on `http://127.0.0.1:<random port>/done` for the key. Only the platform's own page may
 * post (its `Origin`, with the CORS preflight answered for it, Private Network Access included);
 * bodies without `apiKey` or `tenantId` are answered 400 and the wait goes on.
 */
export async function listenForLogin(options: LoopbackOptions): Promise<LoopbackListener> {
  let settle!: { resolve(payload: LoginPayload): void; reject(error: Error): void };
  const payload = new Promise<LoginPayload>((resolve, reject) => {
    settle = { resolve, reject };
  });
  payload.catch(() => {});

  const cors = (req: IncomingMessage): Record<string, string> => ({
    'access-control-allow-origin': options.apiOrigin,
    vary: 'Origin',
    ...(req.headers['access-control-request-private-network'] === 'true'
      ? { 'access-control-allow-private-network': 'true' }
      : {}),
  });
  const answer = (req: IncomingMessage, res: ServerResponse, status: number, body?: object) => {
    const headers: Record<string, string> = { ...cors(req), 'cache-control': 'no-store' };
    if (body) headers['content-type'] = 'application/json';
    res.writeHead(status, headers).end(body ? JSON.stringify(body) : undefined);
  };

  const server = createServer((req, res) => {
    const origin = req.headers.origin;
    if (req.url !== '/done') return void res.writeHead(404).end();
    if (origin !== options.apiOrigin) {
      return void res
        .writeHead(403, { 'content-type': 'application/json' })
        .end('{"error":"Origin refused"}');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        ...cors(req),
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'content-type',
        'access-control-max-age': '60',
      });
      return void res.end();
    }
    if (req.method !== 'POST') return answer(req, res, 405, { error: 'Method not allowed' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return answer(req, res, 413, { error: 'Body too large' });
      let value: unknown;
      try {
        value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer(req, res, 400, { error: 'Body must be JSON' });
      }
      const result = readPayload(value);
      if (typeof result === 'string') return answer(req, res, 400, { error: result });
      answer(req, res, 200, { ok: true });
      settle.resolve(result);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const callbackUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/done`;

  const timer = setTimeout(() => {
    settle.reject(
      new CliError(
        `Login timed out: no key arrived within ${describeSpan(options.timeoutMs)}. Run service login to try again.`,
      ),
    );
  }, options.timeoutMs);

  const onLine = (line: string) => {
    const trimmed = line.trim();
    if (!trimmed) return;
    if (options.onPastedKey && KEY_PATTERN.test(trimmed)) {
      void options.onPastedKey(trimmed).then((pasted) => pasted && settle.resolve(pasted));
      return;
    }
    const result = readPayload(decodeLoginCode(trimmed));
    if (typeof result === 'string') options.onBadPaste?.();
    else settle.resolve(result);
  };
  const stopReading = options.pasteFrom
    ? readHiddenLines(options.pasteFrom, onLine, () =>
        settle.reject(new CliError('Login cancelled.', INTERRUPTED)),
      )
    : undefined;

  return {
    callbackUrl,
    payload,
    close: async () => {
      clearTimeout(timer);
      stopReading?.();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Exit code of a command stopped with Ctrl-C (128 + SIGINT), as shells report it. */
const INTERRUPTED = 130;

/**
 * Lines typed or pasted into `input`, never echoed: the login code is a credential, so it must not
 * stay on the screen or in a terminal's scrollback. A terminal is put in raw mode (echo off) and
 * given back as it was; Ctrl-C calls `onInterrupt`. Input that is not a terminal (a pipe) has no
 * echo to turn off and is read as it comes. Returns the function that stops reading.
 */
export function readHiddenLines(
  input: InputStream,
  onLine: (line: string) => void,
  onInterrupt: () => void,
): () => void {
  if (!input.isTTY || !input.setRawMode) {
    const lines = createInterface({ input, terminal: false });
    lines.on('line', onLine);
    return () => {
      lines.close();
      input.pause?.();
    };
  }
  input.setRawMode(true);
  input.resume?.();
  let line = '';
  const onData = (chunk: Buffer | string) => {
    for (const char of String(chunk)) {
      if (char === '\u0003') return onInterrupt();
      if (char === '\r' || char === '\n') {
        const done = line;
        line = '';
        onLine(done);
      } else if (char === '\u007f' || char === '\b') line = line.slice(0, -1);
      else line += char;
    }
  };
  input.on('data', onData);
  return () => {
    input.removeListener('data', onData);
    input.setRawMode?.(false);
    input.pause?.();
  };
}

/** A login code shown by the page (base64url of the payload JSON), or undefined. */
function decodeLoginCode(code: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(code)) return undefined;
  try {
    return JSON.parse(Buffer.from(code, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** "5 minutes", "1 minute", "300 ms": a wait in words. */
export function describeSpan(ms: number): string {
  const minutes = ms / 60_000;
  if (Number.isInteger(minutes)) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const seconds = ms / 1000;
  return Number.isInteger(seconds) ? `${seconds} second${seconds === 1 ? '' : 's'}` : `${ms} ms`;
}
