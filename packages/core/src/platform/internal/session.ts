import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { SESSION_COOKIE } from '../../identity/sessions.js';
import type { MembershipRole } from '../../store/database.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { isCrossOrigin } from '../routes/auth.js';

/** A signed-in dashboard user in their workspace. */
export interface SessionCaller {
  userId: string;
  subject: string;
  email: string | null;
  tenantId: string;
  role: MembershipRole;
}

/**
 * The signed-in user of the session cookie with their role in their workspace, or null.
 * A user without a workspace counts as not signed in here.
 */
export async function sessionCaller(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
): Promise<SessionCaller | null> {
  const user = await ctx.sessions.resolve(getCookie(c, SESSION_COOKIE));
  if (!user?.tenantId) return null;
  const membership = await ctx.db
    .selectFrom('memberships')
    .select('role')
    .where('tenant_id', '=', user.tenantId)
    .where('user_id', '=', user.userId)
    .executeTakeFirst();
  if (!membership) return null;
  return {
    userId: user.userId,
    subject: user.subject,
    email: user.email,
    tenantId: user.tenantId,
    role: membership.role,
  };
}

/**
 * Why a cookie-authenticated change is refused, or null when it may proceed. A browser sends the
 * cookie along with cross-site requests, so such changes must come from our own origin and carry
 * JSON (a content type no cross-site form can send without a CORS preflight we never allow).
 */
export function cookieWriteRefusal(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
): 'cross_origin' | 'not_json' | null {
  if (isCrossOrigin(c, ctx.baseUrl)) return 'cross_origin';
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type.trim())) return 'not_json';
  return null;
}

export function canWrite(role: MembershipRole): boolean {
  return role === 'owner' || role === 'member';
}
