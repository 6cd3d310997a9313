import type { z } from 'zod';
import { CliError } from './cli-error.js';
import type { CliConfig } from './config.js';
import { printable } from './io.js';

/** A platform answer the CLI understood. */
export interface ApiAnswer<T = unknown> {
  status: number;
  body: T;
}

/** What a call may change from the defaults for the stored key. */
export interface CallOptions {
  /** The error for a 401: the stored key's says to log in again, a pasted key's to paste another. */
  rejected?: string;
  /** How long to wait for the answer. */
  timeoutMs?: number;
}

const STORED_KEY_REJECTED =
  'The platform rejected the stored key (revoked or expired). Run service login again.';

/**
 * Calls the platform with a key (the stored one unless the caller passes another). Network
 * failures, a rejected key and rate limiting become CliErrors that say what to do; other statuses
 * are returned for the command to judge.
 */
export async function callPlatform<T = unknown>(
  config: Pick<CliConfig, 'apiBase' | 'apiKey'>,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<ApiAnswer<T>> {
  let response: Response;
  try {
    response = await fetch(`${config.apiBase}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${config.apiKey}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
  } catch (error) {
    throw new CliError(`Could not reach ${config.apiBase}: ${failureReason(error)}`, 1, { cause: error });
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    // Headers came, then the connection dropped (or stalled past the timeout) mid-answer.
    const reason =
      (error as Error)?.name === 'TimeoutError'
        ? failureReason(error)
        : 'the connection closed before the whole answer came';
    throw new CliError(`Could not reach ${config.apiBase}: ${reason}`, 1, { cause: error });
  }
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: keep the text for the message.
  }
  if (response.status === 401) {
    throw new CliError(options.rejected ?? STORED_KEY_REJECTED);
  }
  if (response.status === 429) {
    const seconds = retryAfterSeconds(response.headers.get('retry-after'));
    throw new CliError(
      `The platform is limiting requests from here (${messageOf({ status: 429, body: parsed })}). ${
        seconds === null ? 'Try again later.' : `Try again in ${seconds} s.`
      }`,
    );
  }
  return { status: response.status, body: parsed as T };
}

/**
 * The body of a success answer checked against `schema`: a wrong `apiBase` (some other web server
 * answering 200) is then a clear error instead of a crash on a missing field.
 */
export function bodyOf<S extends z.ZodType>(
  answer: ApiAnswer,
  schema: S,
  config: CliConfig,
  path: string,
): z.infer<S> {
  const parsed = schema.safeParse(answer.body);
  if (!parsed.success) throw notThePlatform(config, path);
  return parsed.data;
}

/** The error for an answer no platform gives (a wrong shape, or no such route). */
export function notThePlatform(config: CliConfig, path: string): CliError {
  return new CliError(
    `${config.apiBase} gave an unexpected answer to ${path}: is apiBase the platform? Run service login --api-base <url> to change it.`,
  );
}

/** The message of an error answer, whatever its shape. */
export function messageOf(answer: ApiAnswer): string {
  const body = answer.body as { message?: unknown; error?: { message?: unknown } | string } | undefined;
  const message =
    typeof body?.message === 'string'
      ? body.message
      : typeof body?.error === 'string'
        ? body.error
        : typeof body?.error?.message === 'string'
          ? body.error.message
          : `HTTP ${answer.status}`;
  return printable(message);
}

/** The most telling part of a fetch failure: the socket error code when there is one. */
export function failureReason(error: unknown): string {
  if ((error as Error)?.name === 'TimeoutError') return 'no answer in time';
  const cause = (error as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } })
    ?.cause;
  const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code;
  if (code) return code;
  if (cause?.message) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * `Retry-After` in whole seconds (delta-seconds, a fraction rounded up, or an HTTP date), or null
 * without a usable one. Only a value naming a day or month is read as a date: `Date.parse` reads
 * `2.5` as a date long past ("try again in 0 s").
 */
function retryAfterSeconds(value: string | null): number | null {
  const trimmed = value?.trim();
  if (!trimmed) return null;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed));
  if (!/[a-z]{3}/i.test(trimmed)) return null;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
