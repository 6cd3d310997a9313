import { type Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { escapeHtml } from '../../http/html.js';
import type { Invitation, InvitationPreview } from '../../identity/invitations.js';
import { safeEqual } from '../../identity/keys.js';
import { SESSION_COOKIE, type SessionUser } from '../../identity/sessions.js';
import { WorkspaceError } from '../../identity/workspaces.js';
import { isUuid } from '../../internal/uuid.js';
import { csrfTokenFor } from '../cli/bootstrap.js';
import { layout, messagePage, pageHeaders } from '../cli/bootstrap-page.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { when } from '../dashboard/format.js';
import { readPageForm } from '../internal/page-form.js';
import type { MailMessage } from '../mailer.js';

/** What the accept form's CSRF token is bound to (with the session). */
export const INVITATION_CSRF_PURPOSE = 'service-invitation-accept';
/** The accept form is two short fields. */
const MAX_FORM_BYTES = 4 * 1024;

type PageStatus = 200 | 400 | 401 | 403 | 404 | 413;

/**
 * The accept link of an invitation, `/invitations/accept?token=…` (the token rides in the query,
 * which the request log leaves out). Signed out, it sends the browser to sign in and back;
 * signed in with the invited email, it shows the workspace and the role and an "Accept" button,
 * whose form (same origin, CSRF token bound to the session) makes the user a member; signed in
 * with another, it says whom the invitation is for and how to sign in as them (403). Accepting
 * answers a redirect (303) to `/invitations/accepted`, the welcome, so a reload asks for nothing
 * again; the link opened or its form sent again by the user who accepted it leads there too.
 *
 * @see docs/api/members.md "Invitations"
 */
export function invitationPageRoutes(
  ctx: PlatformContext,
  options: { devSignIn: boolean },
): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const basePath = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  const page = (c: Context, status: PageStatus, html: string) => c.body(html, status, pageHeaders());
  const selfUrl = (token: string) => `${basePath}/invitations/accept?${new URLSearchParams({ token })}`;
  const signedInUser = async (c: Context): Promise<SessionUser | null> =>
    ctx.sessions.resolve(getCookie(c, SESSION_COOKIE));
  const welcomeUrl = (tenantId: string) =>
    `${basePath}/invitations/accepted?${new URLSearchParams({ workspace: tenantId })}`;
  const toWelcome = (c: Context, tenantId: string) =>
    c.body(null, 303, { location: welcomeUrl(tenantId), 'cache-control': 'no-store' });
  /** The workspace the signed-in user joined by this link already (its reload, or Back), or null. */
  const joinedBy = async (c: Context, token: string): Promise<string | null> => {
    const user = await signedInUser(c);
    return user ? ctx.invitations.acceptedBy(token, user.userId) : null;
  };
  /** A refusal of the invitation itself, as a page. */
  const refused = (c: Context, error: unknown) => {
    if (!(error instanceof WorkspaceError)) throw error;
    const status = error.status === 403 ? 403 : 404;
    return page(c, status, messagePage('This invitation cannot be accepted', error.message));
  };

  app.get('/invitations/accept', async (c) => {
    c.set('errorShape', 'flat');
    const token = c.req.query('token') ?? '';
    if (!token || token.length > 256) {
      return page(
        c,
        400,
        messagePage('This invitation link is not valid', 'The link has no invitation in it.'),
      );
    }
    let invitation: InvitationPreview;
    try {
      invitation = await ctx.invitations.preview(token);
    } catch (error) {
      const joined = await joinedBy(c, token);
      return joined ? toWelcome(c, joined) : refused(c, error);
    }
    const user = await signedInUser(c);
    if (!user) {
      if (options.devSignIn) {
        const signIn = `${basePath}/auth/v1/sign-in?${new URLSearchParams({ return_to: selfUrl(token) })}`;
        return c.body(null, 303, { location: signIn, 'cache-control': 'no-store' });
      }
      return page(
        c,
        401,
        messagePage(
          'Sign in first',
          `Sign in to ${ctx.baseUrl} as ${invitation.email} in this browser, then open this link again.`,
          { href: selfUrl(token), text: 'Try again' },
        ),
      );
    }
    if (user.email?.toLowerCase() !== invitation.email) {
      // Accepting would be refused: no Accept button, only the way to the right account.
      const signedInAs = user.email ?? user.subject;
      const message = `This invitation is for ${invitation.email}, and you are signed in as ${signedInAs}. Sign in with ${invitation.email} to accept it.`;
      if (options.devSignIn) {
        const signIn = `${basePath}/auth/v1/sign-in?${new URLSearchParams({ return_to: selfUrl(token), login_hint: invitation.email })}`;
        return page(
          c,
          403,
          messagePage('This invitation is for someone else', message, {
            href: signIn,
            text: `Sign in as ${invitation.email}`,
          }),
        );
      }
      return page(
        c,
        403,
        messagePage(
          'This invitation is for someone else',
          `${message} Sign out, sign in to ${ctx.baseUrl} as ${invitation.email} in this browser, then open this link again.`,
          { href: selfUrl(token), text: 'Try again' },
        ),
      );
    }
    return page(
      c,
      200,
      acceptPage(invitation, {
        email: user.email ?? user.subject,
        token,
        csrfToken: csrfTokenFor(getCookie(c, SESSION_COOKIE)!, INVITATION_CSRF_PURPOSE),
      }),
    );
  });

  app.post('/invitations/accept', async (c) => {
    c.set('errorShape', 'flat');
    // A cross-site form must not make the signed-in user join a workspace.
    const posted = await readPageForm(ctx, c, MAX_FORM_BYTES);
    if (!posted.ok) return page(c, posted.status, messagePage(posted.title, posted.message));
    const form = posted.fields;
    const token = typeof form.token === 'string' ? form.token : '';
    if (!token || token.length > 256) {
      return page(
        c,
        400,
        messagePage('This invitation link is not valid', 'The form has no invitation in it.'),
      );
    }
    const again = { href: selfUrl(token), text: 'Open the invitation again' };
    const user = await signedInUser(c);
    if (!user) {
      return page(
        c,
        401,
        messagePage('Sign in first', 'Your session has ended. Sign in and try again.', again),
      );
    }
    const presented = typeof form.csrf_token === 'string' ? form.csrf_token : '';
    if (!safeEqual(presented, csrfTokenFor(getCookie(c, SESSION_COOKIE)!, INVITATION_CSRF_PURPOSE))) {
      return page(
        c,
        403,
        messagePage('Request refused', 'This form did not come from this page, or it has expired.', again),
      );
    }
    let joined: InvitationPreview;
    try {
      joined = await ctx.invitations.accept(token, { userId: user.userId, email: user.email });
    } catch (error) {
      // Sent again by the user who accepted it (a reload of an older answer): the welcome again.
      const again = await ctx.invitations.acceptedBy(token, user.userId);
      return again ? toWelcome(c, again) : refused(c, error);
    }
    ctx.logger.info('invitation accepted', {
      request_id: c.get('requestId'),
      tenant_id: joined.tenantId,
      invitation_id: joined.id,
    });
    // A redirect, so reloading the welcome asks for nothing again.
    return toWelcome(c, joined.tenantId);
  });

  app.get('/invitations/accepted', async (c) => {
    c.set('errorShape', 'flat');
    const user = await signedInUser(c);
    const tenantId = c.req.query('workspace') ?? '';
    const role = user && isUuid(tenantId) ? await ctx.accounts.roleIn(tenantId, user.userId) : null;
    const name = role ? await ctx.accounts.workspaceName(tenantId) : null;
    if (!user) {
      return page(
        c,
        401,
        messagePage('Sign in first', 'Sign in to see the workspaces you belong to.', {
          href: `${basePath}/`,
          text: 'Open the dashboard',
        }),
      );
    }
    if (!role || name === null) {
      return page(
        c,
        404,
        messagePage('No workspace to welcome you to', 'You are not a member of this workspace.', {
          href: `${basePath}/`,
          text: 'Open the dashboard',
        }),
      );
    }
    return page(c, 200, welcomePage({ tenantId, name, role, current: user.tenantId === tenantId }, basePath));
  });

  return app;
}

/** The invitee, once they joined: the workspace, their role in it, and on to the dashboard. */
function welcomePage(
  joined: { tenantId: string; name: string; role: string; current: boolean },
  basePath: string,
): string {
  return layout(
    'Invitation accepted',
    `<h1>Welcome to ${escapeHtml(joined.name)}</h1>
<p id="joined" data-tenant-id="${escapeHtml(joined.tenantId)}">You are a${joined.role === 'owner' ? 'n' : ''}
<strong>${escapeHtml(joined.role)}</strong> of <strong>${escapeHtml(joined.name)}</strong>${joined.current ? '; it is your current\nworkspace' : ''}.</p>
<p><a href="${escapeHtml(`${basePath}/`)}">Open the dashboard</a></p>`,
  );
}

/** The signed-in invitee confirms: join the workspace with the invited role. */
function acceptPage(
  invitation: InvitationPreview,
  view: { email: string; token: string; csrfToken: string },
): string {
  return layout(
    'Join a workspace',
    `<h1>Join <span id="workspace">${escapeHtml(invitation.workspaceName)}</span></h1>
<p>You are invited as <strong id="role">${escapeHtml(invitation.role)}</strong>. Signed in as
<strong id="email">${escapeHtml(view.email)}</strong>.</p>
<form method="post" action="accept">
<input type="hidden" name="token" value="${escapeHtml(view.token)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<button type="submit" id="accept">Accept</button>
</form>
<p class="note">The invitation expires ${escapeHtml(when(invitation.expiresAt.toISOString()))}.</p>`,
  );
}

/** The mail of an invitation: who invites, into which workspace, and the accept link. */
export function invitationMail(input: {
  invitation: Invitation;
  workspace: string;
  from: string | null;
  acceptUrl: string;
}): MailMessage {
  const who = input.from ?? 'A workspace owner';
  return {
    to: input.invitation.email,
    subject: `${who} invited you to ${input.workspace}`,
    text: [
      `${who} invited you to join ${input.workspace} as ${input.invitation.role}.`,
      '',
      `Accept the invitation: ${input.acceptUrl}`,
      '',
      `The link works once and expires ${when(input.invitation.expiresAt.toISOString())}.`,
    ].join('\n'),
  };
}
