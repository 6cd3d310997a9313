/**
 * The host's one service, created on the first request (never during `next build`) and shared by
 * every route handler of this server process. It is kept on `globalThis`, not in this module:
 * Next.js may evaluate this module more than once in one process, and a second service would find
 * the store in use.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from '@service/core/identity';
import { createService, type Principal, type Service } from '@service/core/wire';
import { createDemoModel } from '@service/example-express-host/demo-model';
import { hostTools } from '@service/example-express-host/tools';

// Unset: a fresh secret per server process, so sessions end when it restarts.
const SECRET = process.env.HOST_SESSION_SECRET || randomBytes(32).toString('base64url');
export const SESSION_COOKIE = 'host_session';

/** A sign-in stand-in: `user:<email>` plus an HMAC. A real app uses its own auth (NextAuth, Clerk...). */
export function tokenFor(email: string): string {
  const subject = `user:${email.trim().toLowerCase()}`;
  return `${Buffer.from(subject).toString('base64url')}.${createHmac('sha256', SECRET).update(subject).digest('base64url')}`;
}

function principalOf(request: Request): Principal | null {
  const cookie = (request.headers.get('cookie') ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`))
    ?.slice(SESSION_COOKIE.length + 1);
  const dot = cookie?.lastIndexOf('.') ?? -1;
  if (!cookie || dot <= 0) return null;
  const subject = Buffer.from(cookie.slice(0, dot), 'base64url').toString('utf8');
  const expected = createHmac('sha256', SECRET).update(subject).digest('base64url');
  return subject.startsWith('user:') && safeEqual(cookie.slice(dot + 1), expected) ? { subject } : null;
}

const shared = globalThis as typeof globalThis & { __appService?: Promise<Service> };

/**
 * The Express demo's order tools and its offline model, so the example chats with no key; with
 * `SERVICE_MODEL` set (and `AI_GATEWAY_API_KEY`), the ladder's model instead. Or pass your own,
 * e.g. `model: openai('gpt-4o-mini')` from `@ai-sdk/openai`. The store is `createStore()`'s
 * default: `DATABASE_URL`, else PGlite under `SERVICE_DATA_DIR` (default `.service/data`).
 */
export function getService(): Promise<Service> {
  if (!shared.__appService) {
    const made = createService({
      principal: principalOf,
      tools: hostTools,
      system: 'You help the signed-in user with their orders.',
      ...(process.env.SERVICE_MODEL ? {} : { model: createDemoModel() }),
    });
    shared.__appService = made;
    // Failed (the store briefly unreachable): the next request tries again.
    made.catch(() => {
      if (shared.__appService === made) shared.__appService = undefined;
    });
  }
  return shared.__appService;
}
