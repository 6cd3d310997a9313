import { html } from '../../../http/html.js';
import { INVITATION_EMAIL_MAX, invitationEmail } from '../../routes/members.js';
import { onceInput, oncePerForm } from '../form-once.js';
import { when } from '../format.js';
import { type DashboardPage, field, fromAnswer, input, table } from '../page.js';

interface Member {
  userId: string;
  email: string | null;
  name: string | null;
  role: string;
  joinedAt: string;
}

interface Invitation {
  id: string;
  email: string;
  role: string;
  createdAt: string;
  expiresAt: string;
  invitedBy: { userId: string; email: string | null } | null;
}

const ROLES = ['owner', 'member', 'viewer'] as const;

/** The answer to an invitation form sent again (its answer reloaded): nothing was sent. */
const INVITE_SENT_AGAIN =
  'This invitation was already sent and its link shown once; nothing was sent again, so that link still works. To send a new link, invite the person again below (the earlier link then stops working).';

/** Why the API would refuse `email`, in the form's words, or null. */
function emailRefusal(email: string): string | null {
  if (email.length > INVITATION_EMAIL_MAX)
    return `The email address is too long (at most ${INVITATION_EMAIL_MAX} characters).`;
  return invitationEmail.safeParse(email).success
    ? null
    : 'Enter a full email address, like name@example.com.';
}

/** Why a role the form sent is not one the API takes, in the form's words (its select offers only these). */
const roleRefusal = (role: string): string | null =>
  (ROLES as readonly string[]).includes(role) ? null : 'Choose a role: owner, member or viewer.';

const roleSelect = (id: string, selected: string, label: string) =>
  html`<label for="${id}" class="visually-hidden">${label}</label><select id="${id}" name="role">${ROLES.map((role) => html`<option value="${role}"${role === selected ? html` selected` : null}>${role}</option>`)}</select>`;

/**
 * Members: who is in the workspace and their roles, invitations by email, pending invitations.
 * Everyone sees the list and may leave (but the only owner); owners change roles, remove people and
 * invite, as the members API decides.
 */
export const membersPage: DashboardPage = {
  path: '/members',
  nav: 'members',
  title: () => 'Members',
  async render(view) {
    const owner = view.user!.role === 'owner';
    const [members, invitations] = await Promise.all([
      view.api.get<{ members: Member[] }>('/api/tenants/me/members'),
      owner ? view.api.get<{ invitations: Invitation[] }>('/api/tenants/me/invitations') : null,
    ]);
    const people = members.ok ? members.body.members : [];
    const owners = people.filter((m) => m.role === 'owner').length;
    const me = view.user!.userId;
    const rows = people.map((m) => {
      // The API refuses to demote or remove the only owner (a workspace needs one): no such forms.
      const onlyOwner = m.role === 'owner' && owners === 1;
      const manage = owner && !onlyOwner;
      const who = m.email ?? m.userId;
      return [
        m.name ?? m.email ?? m.userId,
        m.email ?? '',
        manage
          ? view.form(
              'role',
              html`<input type="hidden" name="user" value="${m.userId}">${roleSelect(`role-${m.userId}`, m.role, `Role of ${who}`)} `,
              { submit: 'Change role', buttonClass: 'secondary', label: `Role of ${who}` },
            )
          : m.role,
        when(m.joinedAt),
        // Anyone may leave, as the API lets them, but the only owner: their own row offers Leave
        // rather than Remove, and leaving takes them out of this workspace's pages.
        m.userId === me && !onlyOwner
          ? view.form('leave', html``, {
              submit: 'Leave',
              buttonClass: 'danger',
              confirm: 'Leave this workspace? Only an owner can invite you back.',
              label: 'Leave the workspace',
            })
          : manage
            ? view.form('remove', html`<input type="hidden" name="user" value="${m.userId}">`, {
                submit: 'Remove',
                buttonClass: 'danger',
                confirm: `Remove ${m.email ?? 'this person'} from the workspace?`,
                label: `Remove ${who}`,
              })
            : owner
              ? html`<span class="muted" id="only-owner">The only owner: make someone else owner before changing this role or removing them.</span>`
              : '',
      ];
    });
    return html`<section aria-labelledby="members-title"><h2 id="members-title">People</h2>
${table('Members', ['Name', 'Email', 'Role', 'Joined', ''], rows, 'No members.')}</section>
${
  owner
    ? html`<section aria-labelledby="invite-title"><h2 id="invite-title">Invite someone</h2>
${view.form('invite', html`${onceInput()}${input('invite-email', 'Email', { name: 'email', type: 'email', required: true, maxlength: INVITATION_EMAIL_MAX })}<label for="invite-role">Role</label><select id="invite-role" name="role">${ROLES.map((role) => html`<option value="${role}"${role === 'member' ? html` selected` : null}>${role}</option>`)}</select>`, { submit: 'Send invitation', label: 'Invite someone' })}
<h3>Pending invitations</h3>
${table(
  'Pending invitations',
  ['Email', 'Role', 'Invited by', 'Expires', ''],
  (invitations?.ok ? invitations.body.invitations : []).map((i) => [
    i.email,
    i.role,
    i.invitedBy ? (i.invitedBy.email ?? i.invitedBy.userId) : '',
    when(i.expiresAt),
    view.form('withdraw', html`<input type="hidden" name="id" value="${i.id}">`, {
      submit: 'Withdraw',
      buttonClass: 'secondary',
      label: `Withdraw the invitation of ${i.email}`,
    }),
  ]),
  'No pending invitations.',
)}</section>`
    : null
}`;
  },
  actions: {
    invite: {
      done: 'Invitation sent.',
      async run(view, f) {
        const email = field(f, 'email').trim();
        const refusal = emailRefusal(email) ?? roleRefusal(field(f, 'role'));
        if (refusal) return { refused: refusal };
        // Sent again (a reload of its answer), the form would replace the invitation just shown.
        return oncePerForm(view, f, '/members invite', INVITE_SENT_AGAIN, async () => {
          // A new invitation replaces the person's pending one: read it first, to say its link ends.
          const before = await view.api.get<{ invitations: Invitation[] }>('/api/tenants/me/invitations');
          const replaces = before.ok && before.body.invitations.some((i) => i.email === email.toLowerCase());
          const answer = await view.api.send<{ acceptUrl: string; mailed: boolean }>(
            'POST',
            '/api/tenants/me/invitations',
            { email, role: field(f, 'role') },
          );
          if (!answer.ok) return fromAnswer(answer);
          // Shown on this answer only: the link is the invitation, and no mail may have carried it.
          const { acceptUrl, mailed } = answer.body;
          return {
            show: html`<div class="notice done" role="status"><p><strong>${mailed ? `Invitation sent to ${email}.` : `No mail was sent to ${email}: pass this link on yourself.`}</strong> ${mailed ? 'The link it carries, to pass on another way:' : 'Copy it now: it is not shown again.'}</p>
<p class="secret" id="invitation-link">${acceptUrl}</p>${replaces ? html`<p id="replaced-invitation">It replaces the invitation sent to ${email} before: that earlier link no longer works.</p>` : null}</div>`,
          };
        });
      },
    },
    role: {
      done: 'Role changed.',
      async run(view, f) {
        const refusal = roleRefusal(field(f, 'role'));
        if (refusal) return { refused: refusal };
        return fromAnswer(
          await view.api.send('PATCH', `/api/tenants/me/members/${encodeURIComponent(field(f, 'user'))}`, {
            role: field(f, 'role'),
          }),
        );
      },
    },
    remove: {
      done: 'Removed from the workspace.',
      run: async (view, f) =>
        fromAnswer(
          await view.api.send('DELETE', `/api/tenants/me/members/${encodeURIComponent(field(f, 'user'))}`),
        ),
    },
    leave: {
      done: 'You left the workspace.',
      async run(view) {
        const answer = await view.api.send(
          'DELETE',
          `/api/tenants/me/members/${encodeURIComponent(view.user!.userId)}`,
        );
        // Leaving moves the reader to their next workspace, or to none: its home, not this page.
        return answer.ok ? { redirect: `${view.base}/` } : fromAnswer(answer);
      },
    },
    withdraw: {
      done: 'Invitation withdrawn.',
      run: async (view, f) =>
        fromAnswer(
          await view.api.send('DELETE', `/api/tenants/me/invitations/${encodeURIComponent(field(f, 'id'))}`),
        ),
    },
  },
};
