import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import type { Invitation, PendingInvitation } from '../../identity/invitations.js';
import type { Member } from '../../identity/members.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requireSafeCookieWrite, requireSession, type SessionCaller } from '../internal/session.js';
import { invitationMail } from './invitation-page.js';

const ROLES = ['owner', 'member', 'viewer'] as const;
const roleSchema = z.strictObject({ role: z.enum(ROLES) });
/** The longest email address an invitation takes (RFC 5321's path limit). */
export const INVITATION_EMAIL_MAX = 254;
/** An invitation's email address, as the API takes it (the dashboard checks it first). */
export const invitationEmail = z.string().trim().max(INVITATION_EMAIL_MAX).pipe(z.email());
const inviteSchema = z.strictObject({
  email: invitationEmail,
  role: z.enum(ROLES),
});

/**
 * The people of the current workspace: members (every role reads; owners change roles and
 * remove; anyone may leave) and invitations by email (owners). Session cookie only; camelCase
 * bodies; flat error bodies.
 *
 * @see docs/api/members.md
 */
export function memberRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  const callerOf = async (c: Context<PlatformEnv>, write: boolean): Promise<SessionCaller> => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    if (write) requireSafeCookieWrite(ctx, c);
    return user;
  };
  const forbidden = () =>
    new PlatformError(403, 'Forbidden: only workspace owners manage members', { code: 'FORBIDDEN' });
  const ownerOf = async (c: Context<PlatformEnv>, write: boolean): Promise<SessionCaller> => {
    const user = await callerOf(c, write);
    if (user.role !== 'owner') throw forbidden();
    return user;
  };

  app.get('/api/tenants/me/members', async (c) => {
    const user = await callerOf(c, false);
    const members = await ctx.members.list(user.tenantId);
    return c.json({ members: members.map(publicMember) }, 200, NO_STORE);
  });

  app.patch('/api/tenants/me/members/:userId', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, roleSchema);
    const member = await ctx.members.setRole(owner.tenantId, c.req.param('userId'), body.role);
    return c.json({ member: publicMember(member) }, 200, NO_STORE);
  });

  app.delete('/api/tenants/me/members/:userId', async (c) => {
    const userId = c.req.param('userId');
    // Leaving is everyone's right; removing someone else is an owner's.
    const caller = await callerOf(c, true);
    if (userId !== caller.userId && caller.role !== 'owner') throw forbidden();
    await ctx.members.remove(caller.tenantId, userId);
    return c.json({ userId, removed: true }, 200, NO_STORE);
  });

  app.get('/api/tenants/me/invitations', async (c) => {
    const owner = await ownerOf(c, false);
    const pending = await ctx.invitations.pending(owner.tenantId);
    return c.json(
      { invitations: pending.map((i) => ({ ...publicInvitation(i), invitedBy: publicInviter(i) })) },
      200,
      NO_STORE,
    );
  });

  app.post('/api/tenants/me/invitations', async (c) => {
    const owner = await ownerOf(c, true);
    const body = await readJsonBody(c, inviteSchema);
    // Each invitation mails an address the caller chose: counted per workspace, not per address.
    const verdict = await ctx.limiter.hit(`invitations:${owner.tenantId}`, ctx.rateLimits.invitations);
    if (!verdict.allowed) {
      throw new PlatformError(429, 'Rate limit exceeded', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    const issued = await ctx.invitations.create(owner.tenantId, {
      email: body.email,
      role: body.role,
      invitedBy: owner.userId,
    });
    const acceptUrl = `${ctx.baseUrl}/invitations/accept?${new URLSearchParams({ token: issued.token })}`;
    const workspace = (await ctx.accounts.workspaceName(owner.tenantId)) ?? 'a workspace';
    let mailed = false;
    if (ctx.mailer) {
      try {
        await ctx.mailer.send(
          invitationMail({ invitation: issued.invitation, workspace, from: owner.email, acceptUrl }),
        );
        mailed = true;
      } catch (error) {
        // The invitation stands: the owner has the link to pass on another way.
        ctx.logger.warn('invitation mail not sent', {
          request_id: c.get('requestId'),
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return c.json({ invitation: publicInvitation(issued.invitation), acceptUrl, mailed }, 201, NO_STORE);
  });

  app.delete('/api/tenants/me/invitations/:id', async (c) => {
    const owner = await ownerOf(c, true);
    await ctx.invitations.withdraw(owner.tenantId, c.req.param('id'));
    return c.json({ id: c.req.param('id'), withdrawn: true }, 200, NO_STORE);
  });

  return app;
}

function publicMember(member: Member) {
  return {
    userId: member.userId,
    email: member.email,
    name: member.name,
    role: member.role,
    joinedAt: member.joinedAt.toISOString(),
  };
}

function publicInvitation(invitation: Invitation) {
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    createdAt: invitation.createdAt.toISOString(),
    expiresAt: invitation.expiresAt.toISOString(),
  };
}

/** Who made a pending invitation: an owner's list says whose authority each one stands on. */
function publicInviter(invitation: PendingInvitation) {
  return invitation.invitedBy && { userId: invitation.invitedBy.userId, email: invitation.invitedBy.email };
}
