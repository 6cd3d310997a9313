import { BodyTooLargeError, readBodyText } from '../http/body.js';
import type { ProviderConfig } from './providers.js';
import { tooLarge } from './refusals.js';

/**
 * The caller's request as the proxy forwards it: where it goes upstream, and its body. Token-metered
 * providers get JSON bodies read whole (small, and the model decides the price); a streamed chat
 * completion is asked to report its usage in its last event. Other bodies stream through as they
 * come, cut off past the size limit.
 *
 * @see docs/proxy.md "Forwarding"
 */
export interface ForwardedRequest {
  /** Upper-case method. */
  method: string;
  /** Everything after `/proxy/{provider}`, as sent. */
  subPath: string;
  upstreamUrl: string;
  body: BodyInit | null;
  /** The `model` of a JSON body, which picks the rates; null without one. */
  model: string | null;
  /**
   * The most output tokens the request allows: its `max_tokens` (or `max_completion_tokens`,
   * `max_output_tokens`) times its `n` choices; null when it sets no bound. Admission holds by it.
   */
  maxOutputTokens: number | null;
  /** Size of the body in bytes (declared, for bodies streamed through): the input estimate. */
  inputBytes: number;
}

/** The request to forward, or the 413 that refuses it. */
export async function readRequest(
  request: Request,
  provider: ProviderConfig,
  maxBytes: number,
): Promise<ForwardedRequest | Response> {
  const url = new URL(request.url);
  // The provider segment may be percent-encoded: the rest of the path is forwarded as sent.
  const subPath = `/${url.pathname.split('/').slice(3).join('/')}`;
  const forwarded: ForwardedRequest = {
    method: request.method.toUpperCase(),
    subPath,
    upstreamUrl: `${provider.upstreamUrl}${subPath}${url.search}`,
    body: null,
    model: null,
    maxOutputTokens: null,
    inputBytes: 0,
  };
  if (!request.body) return forwarded;
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > maxBytes) return tooLarge(maxBytes);
  forwarded.inputBytes = Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
  const json = (request.headers.get('content-type') ?? '').includes('json');
  if (provider.dialect === 'per_call' || !json) {
    forwarded.body = limited(request.body, maxBytes);
    return forwarded;
  }
  let text: string;
  try {
    text = await readBodyText(request, { maxBytes });
  } catch (error) {
    if (error instanceof BodyTooLargeError) return tooLarge(maxBytes);
    throw error;
  }
  forwarded.body = text;
  forwarded.inputBytes = Buffer.byteLength(text);
  const fields = jsonObject(text);
  if (!fields) return forwarded;
  forwarded.model = typeof fields.model === 'string' ? fields.model : null;
  forwarded.maxOutputTokens = outputBound(fields);
  if (provider.dialect === 'openai' && fields.stream === true && subPath.endsWith('/chat/completions')) {
    const streamOptions = (fields.stream_options ?? {}) as Record<string, unknown>;
    if (streamOptions.include_usage !== true) {
      forwarded.body = JSON.stringify({
        ...fields,
        stream_options: { ...streamOptions, include_usage: true },
      });
    }
  }
  return forwarded;
}

const OUTPUT_BOUNDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

/** The request's bound on its output tokens across all its choices; null when it sets none. */
function outputBound(fields: Record<string, unknown>): number | null {
  const bounds = OUTPUT_BOUNDS.map((name) => fields[name]).filter(isCount);
  if (bounds.length === 0) return null;
  const choices = isCount(fields.n) ? fields.n : 1;
  const bound = Math.max(...bounds) * choices;
  return Number.isSafeInteger(bound) ? bound : null;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

function jsonObject(text: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : null;
}

/** Passes a body through, cutting it off past `maxBytes` (the upstream sees a failed upload). */
function limited(body: ReadableStream<Uint8Array>, maxBytes: number): ReadableStream<Uint8Array> {
  let size = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size > maxBytes) controller.error(new Error('Request body too large'));
        else controller.enqueue(chunk);
      },
    }),
  );
}
