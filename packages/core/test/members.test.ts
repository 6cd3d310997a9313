/**
 * The people of a workspace over real HTTP: members (list, change role, remove, leave; never
 * without an owner) and invitations by email (single use, expiring, stored hashed, accepted on
 * their page by the invited user only), the development mailbox, and the browser flow from the
 * mailbox to a joined workspace in headless Chromium.
 *
 * @see docs/api/members.md
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../src/identity/keys.js';
import { csrfTokenFor } from '../src/platform/cli/bootstrap.js';
import { INVITATION_CSRF_PURPOSE } from '../src/platform/routes/invitation-page.js';
import { describeInBrowser, launchChromium } from './support/chromium.js';
import {
  llmConnection,
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  startPlatform,
} from './support/platform.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

for (const kind of STORE_KINDS) {
  describe(`members and invitations (${kind})`, () => {
    let store: TestStore;
    let server: RunningPlatform;
    let emails = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      server = await startPlatform(store);
    });
    afterAll(async () => {
      await server?.close();
      await store?.dispose();
    });

    const email = (name: string) => `${name}-${++emails}-${kind}@example.test`;
    const owner = () => signedInOwner(server, email('owner'));
    const call = sessionClient(() => server.url);
    const json = async (response: Response, status: number) => {
      expect(response.status).toBe(status);
      return response.json();
    };
    /** A user signed in through the development IdP: their cookie, id and email. */
    const signIn = async (address: string) => {
      const { token } = await server.platform.devIdp!.issueToken({ email: address });
      const signedIn = await fetch(`${server.url}/api/auth/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
      const { user } = await json(await call(cookie, 'GET', '/api/user/me'), 200);
      return {
        cookie,
        userId: user.id as string,
        email: address,
        ownTenantId: user.currentTenantId as string,
      };
    };
    const invite = async (ws: SignedInOwner, address: string, role = 'member') =>
      json(await call(ws.cookie, 'POST', '/api/tenants/me/invitations', { email: address, role }), 201);
    /** The accept link on this server (the platform's base URL is not the test server's). */
    const local = (acceptUrl: string) => {
      const url = new URL(acceptUrl);
      return `${server.url}${url.pathname}${url.search}`;
    };
    /** The CSRF token the accept page puts in its form for this session. */
    const csrfFor = (cookie: string) => csrfTokenFor(cookie.split('=')[1]!, INVITATION_CSRF_PURPOSE);
    /** Submits the accept page's form as `cookie`; answers the result page. */
    const accept = async (cookie: string, acceptUrl: string) => {
      const token = new URL(acceptUrl).searchParams.get('token')!;
      return fetch(`${server.url}/invitations/accept`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
        body: new URLSearchParams({ token, csrf_token: csrfFor(cookie) }),
      });
    };
    /** Puts a new user into `ws` with `role` through an invitation. */
    const teammate = async (ws: SignedInOwner, role: string) => {
      const user = await signIn(email(role));
      const sent = await invite(ws, user.email, role);
      expect((await accept(user.cookie, sent.acceptUrl)).status).toBe(200);
      return user;
    };

    it('invites by email: shown once, stored hashed, mailed to the dev mailbox, accepted once by the invitee', async () => {
      const ws = await owner();
      const invitee = await signIn(email('Invitee'));
      const sent = await invite(ws, invitee.email.toUpperCase(), 'viewer');
      expect(sent).toEqual({
        invitation: {
          id: expect.any(String),
          email: invitee.email.toLowerCase(),
          role: 'viewer',
          createdAt: expect.stringMatching(/Z$/),
          expiresAt: expect.stringMatching(/Z$/),
        },
        acceptUrl: expect.stringMatching(/\/invitations\/accept\?token=[A-Za-z0-9_-]{43}$/),
        mailed: true,
      });
      const token = new URL(sent.acceptUrl).searchParams.get('token')!;
      const week = Date.parse(sent.invitation.expiresAt) - Date.parse(sent.invitation.createdAt);
      expect(week).toBe(7 * 24 * 60 * 60 * 1000);
      const row = await store.db
        .selectFrom('invitations')
        .selectAll()
        .where('id', '=', sent.invitation.id)
        .executeTakeFirstOrThrow();
      expect(row.token_hash).toBe(hashSecret(token));
      expect(JSON.stringify(row)).not.toContain(token);
      const listed = await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200);
      expect(JSON.stringify(listed)).not.toContain(token);
      expect(listed.invitations.map((i: { id: string }) => i.id)).toContain(sent.invitation.id);

      const mailbox = await fetch(`${server.url}/dev/mailbox`);
      expect(mailbox.status).toBe(200);
      expect(mailbox.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await mailbox.text();
      expect(html).toContain(invitee.email.toLowerCase());
      expect(html).toContain(`href="${sent.acceptUrl}"`);

      const page = await fetch(local(sent.acceptUrl), { headers: { cookie: invitee.cookie } });
      expect(page.status).toBe(200);
      const form = await page.text();
      expect(form).toContain('id="accept"');
      expect(form).toContain(`name="csrf_token" value="${csrfFor(invitee.cookie)}"`);
      expect(form).toContain('viewer');

      const joined = await accept(invitee.cookie, sent.acceptUrl);
      expect(joined.status).toBe(200);
      const welcome = await joined.text();
      expect(welcome).toContain(`data-tenant-id="${ws.tenantId}"`);
      // And on from there: the dashboard of the workspace just joined.
      expect(welcome).toContain('<a href="/">Open the dashboard</a>');
      // Joining makes the workspace current, with the invited role.
      const current = await json(await call(invitee.cookie, 'GET', '/api/tenants/me'), 200);
      expect(current.tenant).toMatchObject({ id: ws.tenantId, role: 'viewer' });
      const members = await json(await call(ws.cookie, 'GET', '/api/tenants/me/members'), 200);
      expect(members.members).toContainEqual({
        userId: invitee.userId,
        email: invitee.email.toLowerCase(),
        name: null,
        role: 'viewer',
        joinedAt: expect.stringMatching(/Z$/),
      });

      // Single use: the link is spent, and no longer listed. Sent again by the invitee (a reload),
      // the form lands on the welcome again; anyone else is told the link is not valid.
      const again = await accept(invitee.cookie, sent.acceptUrl);
      expect(again.status).toBe(200);
      expect(await again.text()).toContain(`data-tenant-id="${ws.tenantId}"`);
      await expect(
        server.platform.context.invitations.accept(new URL(sent.acceptUrl).searchParams.get('token')!, {
          userId: invitee.userId,
          email: invitee.email,
        }),
      ).rejects.toThrow('not valid');
      const after = await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200);
      expect(after.invitations.map((i: { id: string }) => i.id)).not.toContain(sent.invitation.id);
    });

    it('lets only the invited email accept, and sends a signed-out browser to sign in and back', async () => {
      const ws = await owner();
      const intended = email('intended');
      const sent = await invite(ws, intended);
      const other = await signIn(email('other'));
      // The page refuses at once, with no Accept button, and offers to sign in as the invitee.
      const shown = await fetch(local(sent.acceptUrl), { headers: { cookie: other.cookie } });
      expect(shown.status).toBe(403);
      const explained = await shown.text();
      expect(explained).toContain(
        `This invitation is for ${intended}, and you are signed in as ${other.email}`,
      );
      expect(explained).not.toContain('id="accept"');
      const signInAs = new URL(
        explained.match(/href="([^"]*sign-in[^"]*)"/)![1]!.replaceAll('&amp;', '&'),
        server.url,
      );
      expect(signInAs.searchParams.get('login_hint')).toBe(intended);
      expect(signInAs.searchParams.get('return_to')).toBe(
        new URL(sent.acceptUrl).pathname + new URL(sent.acceptUrl).search,
      );
      const refused = await accept(other.cookie, sent.acceptUrl);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain(`This invitation is for ${intended}`);
      expect((await json(await call(other.cookie, 'GET', '/api/tenants/me'), 200)).tenant.id).toBe(
        other.ownTenantId,
      );

      const signedOut = await fetch(local(sent.acceptUrl), { redirect: 'manual' });
      expect(signedOut.status).toBe(303);
      const location = new URL(signedOut.headers.get('location')!, server.url);
      expect(location.pathname).toBe('/auth/v1/sign-in');
      expect(location.searchParams.get('return_to')).toBe(
        new URL(sent.acceptUrl).pathname + new URL(sent.acceptUrl).search,
      );

      // Still good for the right person.
      const right = await signIn(intended);
      expect((await accept(right.cookie, sent.acceptUrl)).status).toBe(200);
    });

    it('refuses an expired, withdrawn or replaced invitation, a forged form and a cross-site one', async () => {
      const ws = await owner();
      const invitee = await signIn(email('late'));
      const expired = await invite(ws, invitee.email);
      await store.db
        .updateTable('invitations')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('id', '=', expired.invitation.id)
        .execute();
      expect((await fetch(local(expired.acceptUrl), { headers: { cookie: invitee.cookie } })).status).toBe(
        404,
      );
      expect((await accept(invitee.cookie, expired.acceptUrl)).status).toBe(404);

      const first = await invite(ws, invitee.email);
      const second = await invite(ws, invitee.email, 'viewer');
      expect((await accept(invitee.cookie, first.acceptUrl)).status).toBe(404);
      const withdrawn = await call(
        ws.cookie,
        'DELETE',
        `/api/tenants/me/invitations/${second.invitation.id}`,
      );
      expect(await json(withdrawn, 200)).toEqual({ id: second.invitation.id, withdrawn: true });
      expect((await accept(invitee.cookie, second.acceptUrl)).status).toBe(404);
      expect(
        (await call(ws.cookie, 'DELETE', `/api/tenants/me/invitations/${second.invitation.id}`)).status,
      ).toBe(404);
      expect((await call(ws.cookie, 'DELETE', '/api/tenants/me/invitations/not-an-id')).status).toBe(404);

      const third = await invite(ws, invitee.email);
      const token = new URL(third.acceptUrl).searchParams.get('token')!;
      const forged = await fetch(`${server.url}/invitations/accept`, {
        method: 'POST',
        headers: { cookie: invitee.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, csrf_token: 'forged' }),
      });
      expect(forged.status).toBe(403);
      const crossSite = await fetch(`${server.url}/invitations/accept`, {
        method: 'POST',
        headers: {
          cookie: invitee.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'https://evil.example',
        },
        body: new URLSearchParams({ token, csrf_token: 'x' }),
      });
      expect(crossSite.status).toBe(403);
      expect((await fetch(`${server.url}/invitations/accept`)).status).toBe(400);
      expect((await fetch(`${server.url}/invitations/accept?token=nope`)).status).toBe(404);
      const members = await json(await call(ws.cookie, 'GET', '/api/tenants/me/members'), 200);
      expect(members.members.map((m: { userId: string }) => m.userId)).not.toContain(invitee.userId);
      // The third invitation is still good.
      expect((await accept(invitee.cookie, third.acceptUrl)).status).toBe(200);
      // And a member is not invited again.
      const twice = await call(ws.cookie, 'POST', '/api/tenants/me/invitations', {
        email: invitee.email,
        role: 'member',
      });
      expect(twice.status).toBe(409);
      expect(await twice.json()).toEqual({
        message: `${invitee.email} is already a member of this workspace`,
        code: 'CONFLICT',
      });
    });

    it('changes roles and removes members, owners only, never leaving a workspace without an owner', async () => {
      const ws = await owner();
      const wsOwner = (await json(await call(ws.cookie, 'GET', '/api/user/me'), 200)).user.id as string;
      const member = await teammate(ws, 'member');
      const viewer = await teammate(ws, 'viewer');

      const listed = await json(await call(viewer.cookie, 'GET', '/api/tenants/me/members'), 200);
      expect(listed.members.map((m: { role: string }) => m.role)).toEqual(['owner', 'member', 'viewer']);

      for (const who of [member, viewer]) {
        const refused = await call(who.cookie, 'PATCH', `/api/tenants/me/members/${who.userId}`, {
          role: 'owner',
        });
        expect(refused.status).toBe(403);
        expect(await refused.json()).toEqual({
          message: 'Forbidden: only workspace owners manage members',
          code: 'FORBIDDEN',
        });
        expect((await call(who.cookie, 'DELETE', `/api/tenants/me/members/${wsOwner}`)).status).toBe(403);
        expect(
          (
            await call(who.cookie, 'POST', '/api/tenants/me/invitations', {
              email: 'x@example.test',
              role: 'owner',
            })
          ).status,
        ).toBe(403);
        expect((await call(who.cookie, 'GET', '/api/tenants/me/invitations')).status).toBe(403);
      }

      const lastOwner = {
        message: 'A workspace needs an owner: make someone else owner first',
        code: 'CONFLICT',
      };
      const demote = await call(ws.cookie, 'PATCH', `/api/tenants/me/members/${wsOwner}`, { role: 'member' });
      expect(demote.status).toBe(409);
      expect(await demote.json()).toEqual(lastOwner);
      const leave = await call(ws.cookie, 'DELETE', `/api/tenants/me/members/${wsOwner}`);
      expect(leave.status).toBe(409);
      expect(await leave.json()).toEqual(lastOwner);

      const promoted = await json(
        await call(ws.cookie, 'PATCH', `/api/tenants/me/members/${member.userId}`, { role: 'owner' }),
        200,
      );
      expect(promoted.member).toMatchObject({ userId: member.userId, role: 'owner' });
      // Two owners: either may now step down, but not both.
      await json(
        await call(member.cookie, 'PATCH', `/api/tenants/me/members/${wsOwner}`, { role: 'viewer' }),
        200,
      );
      expect(
        (await call(member.cookie, 'PATCH', `/api/tenants/me/members/${member.userId}`, { role: 'viewer' }))
          .status,
      ).toBe(409);
      expect((await json(await call(ws.cookie, 'GET', '/api/tenants/me'), 200)).tenant.role).toBe('viewer');

      for (const userId of ['not-an-id', '00000000-0000-4000-8000-000000000000', ws.tenantId]) {
        const missing = await call(member.cookie, 'PATCH', `/api/tenants/me/members/${userId}`, {
          role: 'viewer',
        });
        expect(missing.status).toBe(404);
        expect(await missing.json()).toEqual({ message: 'Member not found', code: 'NOT_FOUND' });
      }
    });

    it('keeps an owner when two owners step each other down at once, and spends a link once under a race', async () => {
      const ws = await owner();
      const first = (await json(await call(ws.cookie, 'GET', '/api/user/me'), 200)).user.id as string;
      const second = await teammate(ws, 'owner');
      const [a, b] = await Promise.all([
        call(ws.cookie, 'PATCH', `/api/tenants/me/members/${second.userId}`, { role: 'member' }),
        call(second.cookie, 'PATCH', `/api/tenants/me/members/${first}`, { role: 'member' }),
      ]);
      // The loser is refused as no longer an owner (403) or, when both checks ran first, as the last one (409).
      const statuses = [a.status, b.status].sort();
      expect(statuses[0]).toBe(200);
      expect([403, 409]).toContain(statuses[1]);
      const { members } = await json(await call(ws.cookie, 'GET', '/api/tenants/me/members'), 200);
      expect(members.filter((m: { role: string }) => m.role === 'owner')).toHaveLength(1);

      const invitee = await signIn(email('racer'));
      // Whoever won is the owner left to invite.
      const stillOwner = a.status === 200 ? ws : { ...ws, cookie: second.cookie };
      const sent = await invite(stillOwner, invitee.email);
      // The link is claimed once; the page answers both sends with the welcome.
      const token = new URL(sent.acceptUrl).searchParams.get('token')!;
      const claims = await Promise.allSettled([
        server.platform.context.invitations.accept(token, { userId: invitee.userId, email: invitee.email }),
        server.platform.context.invitations.accept(token, { userId: invitee.userId, email: invitee.email }),
      ]);
      expect(claims.map((claim) => claim.status).sort()).toEqual(['fulfilled', 'rejected']);
      const answers = await Promise.all([
        accept(invitee.cookie, sent.acceptUrl),
        accept(invitee.cookie, sent.acceptUrl),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
    });

    it('removing a member revokes their CLI keys and the Connection Keys they minted, and moves them back to a workspace of theirs', async () => {
      const ws = await owner();
      const member = await teammate(ws, 'member');
      const cliKey = await server.platform.context.keys.issue({
        tenantId: ws.tenantId,
        kind: 'cli',
        userId: member.userId,
      });
      const connection = await llmConnection(store.db, ws.tenantId);
      const connectionKeysPath = `/api/connections/${connection.id}/keys`;
      const ownersKey = await json(await call(ws.cookie, 'POST', connectionKeysPath, { name: 'owner' }), 201);
      const membersKey = await json(
        await call(member.cookie, 'POST', connectionKeysPath, { name: 'backdoor' }),
        201,
      );
      // Listed for the workspace with who minted each, never the key itself.
      const listed = await json(await call(ws.cookie, 'GET', connectionKeysPath), 200);
      const { user: ownerUser } = await json(await call(ws.cookie, 'GET', '/api/user/me'), 200);
      expect(listed.keys).toEqual([
        expect.objectContaining({ id: membersKey.id, name: 'backdoor', user_id: member.userId }),
        expect.objectContaining({ id: ownersKey.id, name: 'owner', user_id: ownerUser.id }),
      ]);
      expect(JSON.stringify(listed)).not.toContain(membersKey.key);
      const balance = (key: string) =>
        fetch(`${server.url}/api/cli/balance`, { headers: { authorization: `Bearer ${key}` } }).then(
          (r) => r.status,
        );
      expect(await balance(cliKey.key)).toBe(200);
      expect(await balance(membersKey.key)).toBe(200);

      const removed = await call(ws.cookie, 'DELETE', `/api/tenants/me/members/${member.userId}`);
      expect(await json(removed, 200)).toEqual({ userId: member.userId, removed: true });
      expect(await balance(cliKey.key)).toBe(401);
      expect(await balance(membersKey.key)).toBe(401);
      // The owner's key and the connection carry on.
      expect(await balance(ownersKey.key)).toBe(200);
      const left = await json(await call(ws.cookie, 'GET', connectionKeysPath), 200);
      expect(left.keys.map((key: { id: string }) => key.id)).toEqual([ownersKey.id]);
      const back = await json(await call(member.cookie, 'GET', '/api/tenants/me'), 200);
      expect(back.tenant).toMatchObject({ id: member.ownTenantId, role: 'owner' });
      expect((await call(ws.cookie, 'DELETE', `/api/tenants/me/members/${member.userId}`)).status).toBe(404);

      // A member may leave on their own; one whose only workspace it was has none left.
      const viewer = await teammate(ws, 'viewer');
      await store.db.deleteFrom('memberships').where('tenant_id', '=', viewer.ownTenantId).execute();
      await json(await call(viewer.cookie, 'DELETE', `/api/tenants/me/members/${viewer.userId}`), 200);
      expect((await call(viewer.cookie, 'GET', '/api/tenants/me')).status).toBe(401);
      const list = await json(await call(viewer.cookie, 'GET', '/api/tenants'), 200);
      expect(list).toEqual({ tenants: [], currentTenantId: null });
      const fresh = await json(
        await call(viewer.cookie, 'POST', '/api/tenants', { name: 'Fresh start' }),
        201,
      );
      expect((await json(await call(viewer.cookie, 'GET', '/api/tenants/me'), 200)).tenant.id).toBe(
        fresh.tenant.id,
      );
    });

    it('making someone a viewer revokes their CLI keys and the Connection Keys they minted; other role changes revoke nothing', async () => {
      const ws = await owner();
      const connection = await llmConnection(store.db, ws.tenantId);
      const connectionKeysPath = `/api/connections/${connection.id}/keys`;
      /** A CLI key of the workspace for `user` and a Connection Key they mint themselves. */
      const keysOf = async (user: { cookie: string; userId: string }) => ({
        cli: (
          await server.platform.context.keys.issue({
            tenantId: ws.tenantId,
            kind: 'cli',
            userId: user.userId,
          })
        ).key as string,
        minted: (await json(await call(user.cookie, 'POST', connectionKeysPath, { name: 'mine' }), 201))
          .key as string,
      });
      const balance = (key: string) =>
        fetch(`${server.url}/api/cli/balance`, { headers: { authorization: `Bearer ${key}` } }).then(
          (r) => r.status,
        );
      const proxied = (key: string) =>
        fetch(`${server.url}/proxy/llm-gateway/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
        }).then((r) => r.status);
      const setRole = async (userId: string, role: string) =>
        json(await call(ws.cookie, 'PATCH', `/api/tenants/me/members/${userId}`, { role }), 200);

      // A member made owner and back keeps their keys: both roles may hold them.
      const member = await teammate(ws, 'member');
      const kept = await keysOf(member);
      await setRole(member.userId, 'owner');
      await setRole(member.userId, 'member');
      for (const key of [kept.cli, kept.minted]) {
        expect(await balance(key)).toBe(200);
        expect(await proxied(key)).not.toBe(401);
      }

      // Made a viewer, they spend nothing more: the keys answer 401 at once.
      await setRole(member.userId, 'viewer');
      for (const key of [kept.cli, kept.minted]) {
        expect(await balance(key)).toBe(401);
        expect(await proxied(key)).toBe(401);
      }
      expect((await call(member.cookie, 'GET', '/api/tenants/me')).status).toBe(200);

      // An owner made a viewer loses theirs too; the other owner's carry on.
      const second = await teammate(ws, 'owner');
      const owners = await keysOf(second);
      const firstId = (await json(await call(ws.cookie, 'GET', '/api/user/me'), 200)).user.id as string;
      const firstOwners = await keysOf({ cookie: ws.cookie, userId: firstId });
      await setRole(second.userId, 'viewer');
      expect(await balance(owners.cli)).toBe(401);
      expect(await balance(owners.minted)).toBe(401);
      expect(await balance(firstOwners.cli)).toBe(200);
      expect(await balance(firstOwners.minted)).toBe(200);
    });

    it("withdraws an owner's pending invitations when they are removed or stop being an owner, and lists who invited", async () => {
      const ws = await owner();
      const pendingIds = async () =>
        (await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200)).invitations.map(
          (i: { id: string }) => i.id,
        );
      const firstId = (await json(await call(ws.cookie, 'GET', '/api/user/me'), 200)).user.id as string;
      const ownersOwn = await invite(ws, email('kept'), 'member');

      // An owner who invites, then is removed: their invitation no longer lets anyone in.
      const removed = await teammate(ws, 'owner');
      const asRemoved = { ...ws, cookie: removed.cookie };
      const alt = await signIn(email('alt'));
      const sent = await invite(asRemoved, alt.email, 'owner');
      const listed = await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200);
      expect(listed.invitations).toContainEqual({
        ...sent.invitation,
        invitedBy: { userId: removed.userId, email: removed.email },
      });
      await json(await call(ws.cookie, 'DELETE', `/api/tenants/me/members/${removed.userId}`), 200);
      const refused = await accept(alt.cookie, sent.acceptUrl);
      expect(refused.status).toBe(404);
      expect(await refused.text()).toContain('not valid');
      expect(await pendingIds()).not.toContain(sent.invitation.id);

      // An owner made a member (or viewer) no longer invites, so theirs go too.
      const demoted = await teammate(ws, 'owner');
      const another = await signIn(email('another'));
      const second = await invite({ ...ws, cookie: demoted.cookie }, another.email, 'owner');
      await json(
        await call(ws.cookie, 'PATCH', `/api/tenants/me/members/${demoted.userId}`, { role: 'member' }),
        200,
      );
      expect((await accept(another.cookie, second.acceptUrl)).status).toBe(404);

      // The remaining owner's invitation stands, listed as theirs.
      const left = await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200);
      expect(left.invitations.map((i: { id: string }) => i.id)).toEqual([ownersOwn.invitation.id]);
      expect(left.invitations[0].invitedBy.userId).toBe(firstId);
      const members = await json(await call(ws.cookie, 'GET', '/api/tenants/me/members'), 200);
      expect(members.members.map((m: { userId: string }) => m.userId)).not.toContain(alt.userId);
    });

    it('refuses bad input, signed-out callers and unsafe cookie writes with a clear 4xx', async () => {
      const ws = await owner();
      const bad: Array<[string, string, unknown, string]> = [
        ['POST', '/api/tenants/me/invitations', { email: 'not-an-email', role: 'member' }, 'email'],
        ['POST', '/api/tenants/me/invitations', { email: 'a@example.test', role: 'admin' }, 'role'],
        ['POST', '/api/tenants/me/invitations', { email: 'a@example.test' }, 'role'],
        [
          'POST',
          '/api/tenants/me/invitations',
          { email: `${'a'.repeat(250)}@example.test`, role: 'member' },
          'email',
        ],
        ['PATCH', `/api/tenants/me/members/${ws.tenantId}`, { role: 'boss' }, 'role'],
      ];
      for (const [method, path, body, field] of bad) {
        const response = await call(ws.cookie, method, path, body);
        expect(response.status, JSON.stringify(body)).toBe(400);
        const answer = await response.json();
        expect(answer.code).toBe('INVALID_REQUEST');
        expect(answer.message).toContain(field);
      }
      const routes: Array<[string, string]> = [
        ['GET', '/api/tenants/me/members'],
        ['PATCH', '/api/tenants/me/members/x'],
        ['DELETE', '/api/tenants/me/members/x'],
        ['GET', '/api/tenants/me/invitations'],
        ['POST', '/api/tenants/me/invitations'],
        ['DELETE', '/api/tenants/me/invitations/x'],
      ];
      for (const [method, path] of routes) {
        const response = await call('', method, path, method === 'GET' ? undefined : {});
        expect(response.status, `${method} ${path}`).toBe(401);
        expect(await response.json()).toEqual({ message: 'Unauthorized' });
      }
      const crossSite = await call(
        ws.cookie,
        'POST',
        '/api/tenants/me/invitations',
        { email: 'a@example.test', role: 'member' },
        { origin: 'https://evil.example' },
      );
      expect(crossSite.status).toBe(403);
      const notJson = await call(ws.cookie, 'POST', '/api/tenants/me/invitations', 'email=a', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(notJson.status).toBe(415);
      expect(
        (await json(await call(ws.cookie, 'GET', '/api/tenants/me/invitations'), 200)).invitations,
      ).toEqual([]);
    });
  });
}

describe('invitation rate limit', () => {
  let store: TestStore;
  let server: RunningPlatform;
  beforeAll(async () => {
    store = await openTestStore();
    server = await startPlatform(store, { rateLimits: { invitations: { limit: 2, windowMs: 60_000 } } });
  });
  afterAll(async () => {
    await server?.close();
    await store?.dispose();
  });

  it('counts invitations per workspace and answers 429 with Retry-After past the limit', async () => {
    const invite = (ws: SignedInOwner, n: number) =>
      fetch(`${server.url}/api/tenants/me/invitations`, {
        method: 'POST',
        headers: { cookie: ws.cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `limited-${n}@example.test`, role: 'member' }),
      });
    const busy = await signedInOwner(server, 'busy-owner@example.test');
    expect((await invite(busy, 1)).status).toBe(201);
    expect((await invite(busy, 2)).status).toBe(201);
    const refused = await invite(busy, 3);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({ message: 'Rate limit exceeded' });
    // Another workspace has its own count.
    const calm = await signedInOwner(server, 'calm-owner@example.test');
    expect((await invite(calm, 4)).status).toBe(201);
  });
});

describe('mail in production', () => {
  let store: TestStore;
  let server: RunningPlatform;
  beforeAll(async () => {
    store = await openTestStore();
    // Production refuses the development IdP: sessions are made here with the store's own helpers.
    server = await startPlatform(store, { production: true, identity: { verify: async () => null } });
  });
  afterAll(async () => {
    await server?.close();
    await store?.dispose();
  });

  it('has no dev mailbox, and without a mailer hands the link to the owner only', async () => {
    expect((await fetch(`${server.url}/dev/mailbox`)).status).toBe(404);
    const { userId } = await server.platform.context.accounts.ensure({
      subject: 'prod-owner',
      email: 'p@example.test',
    });
    const { token } = await server.platform.context.sessions.create(userId);
    const response = await fetch(`${server.url}/api/tenants/me/invitations`, {
      method: 'POST',
      headers: { cookie: `service_session=${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'new@example.test', role: 'member' }),
    });
    expect(response.status).toBe(201);
    const sent = await response.json();
    expect(sent.mailed).toBe(false);
    expect(sent.acceptUrl).toMatch(/\/invitations\/accept\?token=/);
  });
});

describeInBrowser('invitation in a browser', () => {
  let store: TestStore;
  let server: RunningPlatform;
  let browser: Browser;
  beforeAll(async () => {
    store = await openTestStore();
    server = await startPlatform(store);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await store?.dispose();
  });

  it('goes from the dev mailbox through sign-in to a joined workspace', async () => {
    const ws = await signedInOwner(server, 'browser-owner@example.test');
    const invited = await fetch(`${server.url}/api/tenants/me/invitations`, {
      method: 'POST',
      headers: { cookie: ws.cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'browser-invitee@example.test', role: 'member' }),
    });
    expect(invited.status).toBe(201);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.url}/dev/mailbox`);
    const href = await page.locator('#mail a').first().getAttribute('href');
    const link = new URL(href!);
    // The platform's base URL is the default one; the test server listens elsewhere.
    await page.goto(`${server.url}${link.pathname}${link.search}`);
    expect(new URL(page.url()).pathname).toBe('/auth/v1/sign-in');
    await page.fill('#email', 'browser-invitee@example.test');
    await Promise.all([page.waitForURL(/\/invitations\/accept\?token=/), page.click('button[type=submit]')]);
    expect(await page.textContent('#role')).toBe('member');
    await Promise.all([page.waitForSelector('#joined'), page.click('#accept')]);
    expect(await page.getAttribute('#joined', 'data-tenant-id')).toBe(ws.tenantId);
    await context.close();
  });
});
