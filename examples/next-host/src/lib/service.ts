/**
 * The host's one service, created on the first request (never during `next build`) and shared by
 * every route handler of this server process.
 */
import { createHmac } from 'node:crypto';
import { safeEqual } from '@service/core/identity';
import { createService, defineTool, type Principal, type Service } from '@service/core/wire';
import { z } from 'zod';

const SECRET = process.env.HOST_SESSION_SECRET ?? 'development-only-secret-change-me';
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

const tools = [
  defineTool({
    name: 'get_time',
    title: 'Current time',
    description: 'The server’s current time, ISO 8601.',
    input: z.object({}),
    risk: 'read',
    execute: () => ({ now: new Date().toISOString() }),
  }),
];

let service: Promise<Service> | undefined;

/**
 * The model comes from the ladder (`SERVICE_MODEL` + `AI_GATEWAY_API_KEY`) unless you pass one,
 * e.g. `model: openai('gpt-4o-mini')` from `@ai-sdk/openai`.
 */
export function getService(): Promise<Service> {
  service ??= createService({
    principal: principalOf,
    tools,
    system: 'You are the helpful assistant of this app.',
  });
  return service;
}
