import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { cookieWriteRefusal } from '../../identity/session-cookie.js';
import { SESSION_COOKIE, type SessionUser } from '../../identity/sessions.js';
import { isUuid } from '../../internal/uuid.js';
import type { MembershipRole } from '../../store/database.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { credentialFailed, credentialsBlocked, FAILED_CREDENTIALS_MESSAGE } from './rate-limit.js';

/** A signed-in dashboard user in their workspace. */
export interface SessionCaller {
  userId: string;
  subject: string;
  email: string | null;
  tenantId: string;
  role: MembershipRole;
}

/**
 * The signed-in user of the session cookie with their role in their current workspace; refuses
 * (401) anyone else. A user without a workspace counts as not signed in here, unless the route's
 * contract names a 404 for that case: `noWorkspace` is then its message.
 */
export async function requireSession(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  options: { noWorkspace?: string } = {},
): Promise<SessionCaller> {
  const user = await requireUser(ctx, c);
  const role = user.tenantId ? await ctx.accounts.roleIn(user.tenantId, user.userId) : null;
  if (!user.tenantId || !role) {
    if (options.noWorkspace !== undefined) throw new PlatformError(404, options.noWorkspace);
    throw new PlatformError(401, 'Unauthorized');
  }
  return {
    userId: user.userId,
    subject: user.subject,
    email: user.email,
    tenantId: user.tenantId,
    role,
  };
}

/**
 * Refuses (403 FORBIDDEN) a member or viewer on the dashboard's billing and usage routes: the
 * workspace's spend is its owners' business, and every such route refuses in these words.
 *
 * @see docs/api/billing.md
 */
export function requireBillingOwner(user: SessionCaller): void {
  if (user.role !== 'owner') {
    throw new PlatformError(403, 'Forbidden: only workspace owners see and change billing', {
      code: 'FORBIDDEN',
    });
  }
}

/**
 * The signed-in user of the session cookie, with or without a workspace (their account and
 * workspace list need none); refuses (401) anyone else. A cookie that resolves to no session is
 * a failed credential: counted per address, 429 past the limit.
 */
export async function requireUser(ctx: PlatformContext, c: Context<PlatformEnv>): Promise<SessionUser> {
  const cookie = getCookie(c, SESSION_COOKIE);
  const throttled = (wait: number) =>
    new PlatformError(429, FAILED_CREDENTIALS_MESSAGE, { headers: { 'retry-after': String(wait) } });
  if (cookie) {
    const blocked = credentialsBlocked(ctx, c);
    if (blocked !== null) throw throttled(blocked);
  }
  const user = await ctx.sessions.resolve(cookie);
  if (cookie && !user) {
    const wait = await credentialFailed(ctx, c);
    if (wait !== null) throw throttled(wait);
  }
  if (!user) throw new PlatformError(401, 'Unauthorized');
  return user;
}

/**
 * The signed-in user of the session cookie, or null for an anonymous caller, on routes that
 * answer both. A cookie that resolves to no session (expired, signed out) reads as anonymous and
 * is not counted as a failed credential: it asks for nothing an anonymous caller could not have.
 */
export async function optionalUser(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
): Promise<SessionUser | null> {
  const cookie = getCookie(c, SESSION_COOKIE);
  return cookie ? ctx.sessions.resolve(cookie) : null;
}

/**
 * The signed-in platform admin (email in `SERVICE_ADMIN_EMAILS`): 401 for nobody signed in, 403
 * for anyone else; `write` also refuses unsafe cookie writes. Flat error bodies.
 */
export async function requirePlatformAdmin(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  write: boolean,
): Promise<SessionCaller> {
  c.set('errorShape', 'flat');
  const user = await requireSession(ctx, c);
  if (!user.email || !ctx.adminEmails.has(user.email.toLowerCase())) {
    throw new PlatformError(403, 'Forbidden: platform admins only', { code: 'FORBIDDEN' });
  }
  if (write) requireSafeCookieWrite(ctx, c);
  return user;
}

/** Refuses a cookie-authenticated change from another origin (403) or without JSON (415). */
export function requireSafeCookieWrite(ctx: PlatformContext, c: Context<PlatformEnv>): void {
  const refusal = cookieWriteRefusal(
    { origin: c.req.header('origin'), contentType: c.req.header('content-type'), url: c.req.url },
    ctx.baseUrl,
  );
  if (refusal === 'cross_origin') throw new PlatformError(403, 'Cross-origin request refused');
  if (refusal === 'not_json') throw new PlatformError(415, 'Content-Type must be application/json');
}

/** The caller of an anonymous-capable route: whether a platform admin, and their workspace if any. */
export interface OptionalCaller {
  userId: string;
  admin: boolean;
  /** Null without a workspace the user is a member of. */
  tenantId: string | null;
}

/**
 * The signed-in caller of an anonymous-capable route, or null: no cookie, a stale or unknown one
 * (not counted as a failed credential: the route answers as it would anyone), or a session that
 * cannot be read just now (logged). Never refuses.
 */
export async function optionalSession(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
): Promise<OptionalCaller | null> {
  const cookie = getCookie(c, SESSION_COOKIE);
  if (!cookie) return null;
  try {
    const user = await ctx.sessions.resolve(cookie);
    if (!user) return null;
    const role = user.tenantId ? await ctx.accounts.roleIn(user.tenantId, user.userId) : null;
    return {
      userId: user.userId,
      admin: user.email !== null && ctx.adminEmails.has(user.email.toLowerCase()),
      tenantId: role ? user.tenantId : null,
    };
  } catch (error) {
    ctx.logger.warn('session unreadable on an anonymous-capable route', {
      error_message: error instanceof Error ? error.message : String(error),
    });
    return null;
  }
}

/**
 * Why a form rendered for the workspace `formTenantId` must not act now, or null when it may:
 * the user has switched workspace since (in another tab, say) and the form would otherwise act on
 * the workspace they switched to, not the one the page showed. Names the form's workspace only to
 * a member of it.
 */
export async function switchedWorkspaceRefusal(
  ctx: PlatformContext,
  user: SessionCaller,
  formTenantId: string,
): Promise<string | null> {
  if (formTenantId === user.tenantId) return null;
  // A field that is no workspace's id (empty, tampered with) names no workspace the user was in.
  const [formerRole, current] = await Promise.all([
    isUuid(formTenantId) ? ctx.accounts.roleIn(formTenantId, user.userId) : null,
    ctx.accounts.workspaceName(user.tenantId),
  ]);
  const former = formerRole ? await ctx.accounts.workspaceName(formTenantId) : null;
  const was = former === null ? 'another workspace' : `the workspace ${former}`;
  const now = current === null ? 'another workspace' : `the workspace ${current}`;
  return `This page was for ${was}, but you have since switched to ${now}. Nothing was changed: reload the page to work in the workspace you are in now.`;
}
