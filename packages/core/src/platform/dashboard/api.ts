import type { Context } from 'hono';
import { jsonValueProblem } from '../../http/input-guard.js';
import type { PlatformEnv } from '../context.js';
import { FORM_TEXT_NOT_KEPT } from '../internal/page-form.js';

/** The platform's own handler, which the dashboard calls in-process. */
export type PlatformFetch = (request: Request, env: unknown) => Response | Promise<Response>;

/** One answer of the platform API: its status and parsed JSON body (null when it had none). */
export interface ApiAnswer<T = unknown> {
  ok: boolean;
  status: number;
  body: T;
  headers: Headers;
}

/**
 * The dashboard reads and changes everything through the platform's own JSON API, as the signed-in
 * browser would: the same session cookie, the same client address, the same checks. So a page can
 * never do what the API would refuse its user (a viewer changing billing gets the API's 403), and
 * the API stays the one place that decides.
 */
export class DashboardApi {
  constructor(
    private readonly fetchPlatform: PlatformFetch,
    private readonly c: Context<PlatformEnv>,
    private readonly baseUrl: string,
  ) {}

  get<T>(path: string): Promise<ApiAnswer<T>> {
    return this.call<T>('GET', path);
  }

  send<T>(
    method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiAnswer<T>> {
    // A NUL the page's own checks let through (a key, a secret's value) is refused here in the
    // form's words: the API would name the field by its path.
    if (/%00/i.test(path) || jsonValueProblem(body ?? {}, 'body') !== null) {
      return Promise.resolve({
        ok: false,
        status: 400,
        body: { message: FORM_TEXT_NOT_KEPT } as T,
        headers: new Headers(),
      });
    }
    return this.call<T>(method, path, body ?? {}, extraHeaders);
  }

  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiAnswer<T>> {
    const base = new URL(this.baseUrl);
    const headers = new Headers({ ...extraHeaders, accept: 'application/json', origin: base.origin });
    const cookie = this.c.req.header('cookie');
    if (cookie) headers.set('cookie', cookie);
    const forwarded = this.c.req.header('x-forwarded-for');
    if (forwarded) headers.set('x-forwarded-for', forwarded);
    if (body !== undefined) headers.set('content-type', 'application/json');
    const url = `${base.origin}${base.pathname.replace(/\/+$/, '')}${path}`;
    const response = await this.fetchPlatform(
      new Request(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
      this.c.env,
    );
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { ok: response.ok, status: response.status, body: parsed as T, headers: response.headers };
  }
}

/**
 * The message an API refusal carries, in any of the platform's error shapes; a rate limit's says
 * when to try again, from its `Retry-After`.
 */
export function apiErrorMessage(answer: ApiAnswer): string {
  const message = refusalMessage(answer);
  const wait = Number(answer.headers.get('retry-after') ?? Number.NaN);
  if (answer.status !== 429 || !Number.isFinite(wait) || wait < 0) return message;
  return `${message}. Try again in ${waitText(wait)}.`;
}

/** Seconds to wait as a person reads them: seconds under two minutes, else whole minutes up. */
function waitText(seconds: number): string {
  if (seconds < 120) return `${Math.max(1, Math.ceil(seconds))} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

function refusalMessage(answer: ApiAnswer): string {
  const body = answer.body as { error?: unknown; message?: unknown } | null;
  if (body && typeof body.error === 'string') return body.error;
  if (body && typeof body.error === 'object' && body.error !== null) {
    const message = (body.error as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  if (body && typeof body.message === 'string') return body.message;
  return `The request failed (${answer.status}).`;
}
