/**
 * The demo host's sign-in stand-in: `POST /login { "email" }` (or the `GET /login` form, for
 * browsers) answers a token and sets it as an HttpOnly cookie. The token is the subject plus an
 * HMAC, so the host keeps no session state; scripts send it as `Authorization: Bearer <token>`,
 * browsers as the cookie. There is no password: anyone may be anyone, so this is a demo only.
 * A real host uses its own sign-in; the wire only needs `principal(request)`, the door
 * `principal(subject)`.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from '@service/core/identity';
import type { Principal } from '@service/core/wire';

export const SESSION_COOKIE = 'host_session';

export interface SignIn {
  /** A token for `email`, or null when it is not an email address. */
  tokenFor(email: string): { token: string; subject: string } | null;
  /** The wire's principal resolver: the cookie or bearer token's user, else null. */
  principal(request: Request): Principal | null;
  /** The same from the raw header values (for the host's own Express routes). */
  principalOfHeaders(headers: {
    authorization?: string | undefined;
    cookie?: string | undefined;
  }): Principal | null;
  /** The user a subject (`user:<email>`, as `tokenFor` spells it) names, else null. */
  principalOf(subject: string): Principal | null;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,190}$/;
/** A NUL, a bell, DEL, a C1 control: `\s` lets them through, and a subject is stored and shown. */
const CONTROL = /\p{Cc}/u;

/** `user:` and the address make the wire's subject, which holds at most 256 characters. */
const MAX_EMAIL_CHARACTERS = 256 - 'user:'.length;

const isEmail = (value: string) =>
  EMAIL.test(value) && !CONTROL.test(value) && [...value].length <= MAX_EMAIL_CHARACTERS;

export function createSignIn(secret: string = randomBytes(32).toString('hex')): SignIn {
  const mac = (subject: string) => createHmac('sha256', secret).update(subject).digest('base64url');
  const verify = (token: string | undefined): Principal | null => {
    if (!token || token.length > 600) return null;
    const dot = token.lastIndexOf('.');
    if (dot <= 0) return null;
    const subject = Buffer.from(token.slice(0, dot), 'base64url').toString('utf8');
    if (!subject.startsWith('user:') || !safeEqual(token.slice(dot + 1), mac(subject))) return null;
    return userOf(subject);
  };
  const fromHeaders: SignIn['principalOfHeaders'] = (headers) => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
    const cookie = (headers.cookie ?? '')
      .split(';')
      .map((c) => c.trim())
      .find((c) => c.startsWith(`${SESSION_COOKIE}=`))
      ?.slice(SESSION_COOKIE.length + 1);
    return verify(bearer ?? cookie);
  };
  return {
    tokenFor(email) {
      const normalized = email.trim().toLowerCase();
      if (!isEmail(normalized)) return null;
      const subject = `user:${normalized}`;
      return { token: `${Buffer.from(subject).toString('base64url')}.${mac(subject)}`, subject };
    },
    principal(request) {
      return fromHeaders({
        authorization: request.headers.get('authorization') ?? undefined,
        cookie: request.headers.get('cookie') ?? undefined,
      });
    },
    principalOfHeaders: fromHeaders,
    principalOf(subject) {
      const email = subject.startsWith('user:') ? subject.slice(5) : '';
      return isEmail(email) && email === email.trim().toLowerCase() ? userOf(subject) : null;
    },
  };
}

function userOf(subject: string): Principal {
  return { subject, kind: 'user', email: subject.slice(5) };
}
