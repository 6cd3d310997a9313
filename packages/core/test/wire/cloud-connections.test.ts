/**
 * Connections over the wire with the `cloud` source: the host's users' connections kept by a real
 * platform on loopback, reached with the host app's App Key; the provider a local OAuth 2
 * server. Initiate with the host's callback, the provider's sign-in, the platform's callback
 * sending the browser back to the host, polling until connected, per-user isolation, refusals.
 *
 * @see docs/wire.md "Connections"
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cloudConnections } from '../../src/wire/cloud-connections.js';
import type { WireConnection } from '../../src/wire/connections.js';
import type { Service } from '../../src/wire/create-service.js';
import { type OAuthProvider, startOAuthProvider } from '../support/oauth-provider.js';
import {
  devSignIn,
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  startPlatformAtOwnUrl,
} from '../support/platform.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type Caller, callerFor, testService } from './support/wire.js';

const PROVIDER = 'acme-crm';
const ADMIN = 'admin@example.test';
const HOST = 'https://host.test';

for (const kind of STORE_KINDS) {
  describe(`wire connections, cloud source (${kind})`, () => {
    let store: TestStore;
    let server: RunningPlatform;
    let provider: OAuthProvider;
    let owner: SignedInOwner;
    let service: Service;
    let lou: Caller;
    let ada: Caller;
    const asUser = sessionClient(() => server.url);

    beforeAll(async () => {
      store = await openTestStore(kind);
      provider = await startOAuthProvider();
      server = await startPlatformAtOwnUrl(store, {
        adminEmails: [ADMIN],
        connectorOAuth: { refreshEveryMs: 0 },
      });
      await store.db
        .insertInto('integrations')
        .values({
          provider: PROVIDER,
          name: 'Acme CRM',
          kind: 'connector',
          default_profile: 'user_oauth',
          supported_profiles: JSON.stringify(['user_oauth']),
        })
        .execute();
      const admin = await devSignIn(server, ADMIN);
      const url = provider.url;
      const configured = await asUser(admin, 'PUT', `/api/admin/integrations/${PROVIDER}/oauth`, {
        authorizeUrl: `${url}/authorize`,
        tokenUrl: `${url}/token`,
        revocationUrl: `${url}/revoke`,
        clientId: 'platform-client',
        clientSecret: 'platform-secret',
        scopes: ['crm.read'],
      });
      expect(configured.status).toBe(200);
      owner = await signedInOwner(server, 'host-owner@example.test');
      const origins = await asUser(owner.cookie, 'PUT', `/api/apps/${owner.appId}/callback-origins`, {
        callbackOrigins: [HOST],
      });
      expect(origins.status).toBe(200);
      service = await testService(store, {
        connections: cloudConnections({ platformUrl: server.url, appKey: owner.appKey }),
      });
      lou = callerFor((r) => service.fetch(r), 'lou');
      ada = callerFor((r) => service.fetch(r), 'ada');
    });
    afterAll(async () => {
      await service?.close();
      await server?.close();
      await provider?.stop();
      await store?.dispose();
    });
    beforeEach(() => {
      provider.refuseWith(null);
    });

    /** Starts a sign-in as `caller`: the pending connection and the provider's authorize URL. */
    async function initiate(caller: Caller, callbackUrl = `${HOST}/connected`) {
      const started = await caller('/connections', {
        method: 'POST',
        json: { provider: PROVIDER, callbackUrl },
      });
      expect(started.status).toBe(201);
      return (await started.json()) as { connection: WireConnection; authorizeUrl: string };
    }

    /** Initiates as `caller`, then goes where the browser goes: the provider, the platform's callback, the host. */
    async function connect(caller: Caller, callbackUrl = `${HOST}/connected`) {
      const { connection, authorizeUrl } = await initiate(caller, callbackUrl);
      const atProvider = await fetch(authorizeUrl, { redirect: 'manual' });
      expect(atProvider.status).toBe(302);
      // The browser reaches the platform's callback with no platform session: the state is the proof.
      const back = await fetch(atProvider.headers.get('location')!, { redirect: 'manual' });
      expect(back.status).toBe(302);
      return { connection, hostUrl: new URL(back.headers.get('location')!) };
    }

    const poll = async (caller: Caller, id: string) => {
      const answer = await caller(`/connections/${encodeURIComponent(id)}`);
      return { status: answer.status, body: (await answer.json()) as { connection: WireConnection } };
    };

    it('reports cloud in /status and lists the platform connectors with a client', async () => {
      const status = (await (await lou('/status')).json()) as { blocks: { connections: unknown } };
      expect(status.blocks.connections).toBe('cloud');
      const catalog = (await (await lou('/connections/catalog')).json()) as {
        providers: { provider: string }[];
      };
      expect(catalog.providers.map((entry) => entry.provider)).toEqual([PROVIDER]);
    });

    it('connects a host user through the platform: pending, the sign-in, back to the host, connected', async () => {
      const { connection, hostUrl } = await connect(lou);
      expect(connection).toMatchObject({ provider: PROVIDER, status: 'pending' });
      expect(connection.id).toMatch(/^flw_/);
      expect(hostUrl.origin + hostUrl.pathname).toBe(`${HOST}/connected`);
      expect(hostUrl.searchParams.get('connection')).toBe(connection.id);
      expect(hostUrl.searchParams.get('status')).toBe('connected');
      const polled = await poll(lou, connection.id);
      expect(polled.status).toBe(200);
      expect(polled.body.connection).toMatchObject({
        provider: PROVIDER,
        status: 'connected',
        displayName: 'Acme CRM',
      });
      const listed = (await (await lou('/connections')).json()) as { connections: WireConnection[] };
      expect(listed.connections.map((c) => c.id)).toContain(polled.body.connection.id);

      // Another user of the host sees none of it, by list or by id.
      expect(((await (await ada('/connections')).json()) as { connections: unknown[] }).connections).toEqual(
        [],
      );
      expect((await poll(ada, connection.id)).status).toBe(404);
      expect((await poll(ada, polled.body.connection.id)).status).toBe(404);
      // The workspace's own list and switches leave the host's users' connections out.
      const workspace = (await (await asUser(owner.cookie, 'GET', '/api/connections')).json()) as {
        connections: { id: string }[];
      };
      expect(workspace.connections.map((c) => c.id)).not.toContain(polled.body.connection.id);
      // Nor can the workspace's routes reach one by id: not read, changed, revoked, keyed or bound.
      const id = polled.body.connection.id;
      for (const [method, path, body] of [
        ['GET', `/api/connections/${id}`, undefined],
        ['PATCH', `/api/connections/${id}`, { display_name: 'taken' }],
        ['DELETE', `/api/connections/${id}`, undefined],
        ['POST', `/api/connections/${id}/keys`, {}],
        ['GET', `/api/connections/${id}/keys`, undefined],
        ['POST', `/api/apps/${owner.appId}/connections`, { connection_id: id }],
      ] as const) {
        const refused = await asUser(owner.cookie, method, path, body);
        expect(refused.status, `${method} ${path}`).toBe(404);
      }
      const bound = await fetch(`${server.url}/api/deployments/me/connections`, {
        headers: { authorization: `Bearer ${owner.appKey}` },
      });
      expect(JSON.stringify(await bound.json())).not.toContain(id);
      expect((await poll(lou, id)).body.connection).toMatchObject({
        status: 'connected',
        displayName: 'Acme CRM',
      });

      const disconnected = await lou(`/connections/${polled.body.connection.id}`, {
        method: 'DELETE',
        json: {},
      });
      expect(disconnected.status).toBe(200);
      expect(((await disconnected.json()) as { connection: WireConnection }).connection.status).toBe(
        'revoked',
      );
    });

    it('reports a sign-in the provider refused as failed, on the host page and when polled', async () => {
      provider.refuseWith('access_denied');
      const { connection, hostUrl } = await connect(lou);
      expect(hostUrl.searchParams.get('status')).toBe('failed');
      expect(hostUrl.searchParams.get('error')).toBe('Access was not granted');
      expect((await poll(lou, connection.id)).body.connection).toMatchObject({
        status: 'failed',
        error: 'Access was not granted',
      });
    });

    it('cancels a sign-in in progress: revoked from then on, a second DELETE changes nothing, and it can no longer connect', async () => {
      const ids = async () =>
        ((await (await lou('/connections')).json()) as { connections: WireConnection[] }).connections.map(
          (c) => c.id,
        );
      const before = await ids();
      const { connection, authorizeUrl } = await initiate(lou);
      const cancel = async () => {
        const answer = await lou(`/connections/${connection.id}`, { method: 'DELETE', json: {} });
        expect(answer.status).toBe(200);
        return ((await answer.json()) as { connection: WireConnection }).connection;
      };
      const cancelled = await cancel();
      expect(cancelled).toMatchObject({ id: connection.id, status: 'revoked', error: null });
      expect((await poll(lou, connection.id)).body.connection).toEqual(cancelled);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(await cancel()).toEqual(cancelled);
      // The person finishing the provider's sign-in afterwards connects nothing.
      const atProvider = await fetch(authorizeUrl, { redirect: 'manual' });
      const back = await fetch(atProvider.headers.get('location')!, { redirect: 'manual' });
      expect(back.status).toBe(400);
      expect((await poll(lou, connection.id)).body.connection).toEqual(cancelled);
      expect(await ids()).toEqual(before);
    });

    it('connects nothing when the sign-in is cancelled while its callback is already under way', async () => {
      const connected = async () =>
        (
          await store.db
            .selectFrom('connections')
            .select('id')
            .where('end_user', '=', 'lou')
            .where('status', '=', 'connected')
            .execute()
        ).length;
      const before = await connected();
      const { connection, authorizeUrl } = await initiate(lou);
      const atProvider = await fetch(authorizeUrl, { redirect: 'manual' });
      // The cancel lands after the callback claimed its state (so it could not delete it).
      await store.db
        .updateTable('end_user_flows')
        .set({ status: 'revoked' })
        .where('id', '=', connection.id)
        .execute();
      const back = await fetch(atProvider.headers.get('location')!, { redirect: 'manual' });
      expect(back.status).toBe(400);
      expect(await connected()).toBe(before);
      expect((await poll(lou, connection.id)).body.connection.status).toBe('revoked');
    });

    it('refuses a callback off the origins the app registered, an unknown provider, and bad bodies', async () => {
      for (const callbackUrl of [
        'https://evil.test/connected',
        'https://host.test.evil.test/x',
        'not a url',
      ]) {
        const refused = await lou('/connections', {
          method: 'POST',
          json: { provider: PROVIDER, callbackUrl },
        });
        expect(refused.status, callbackUrl).toBe(400);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('validation_failed');
      }
      const unknown = await lou('/connections', {
        method: 'POST',
        json: { provider: 'nope', callbackUrl: `${HOST}/x` },
      });
      expect(unknown.status).toBe(404);
      expect((await poll(lou, 'flw_unknown')).status).toBe(404);
      expect((await poll(lou, randomUUID())).status).toBe(404);
    });

    it('answers connections_unavailable when the platform refuses the key', async () => {
      const wrong = await testService(store, {
        connections: cloudConnections({ platformUrl: server.url, appKey: 'service_sk_not-a-real-key' }),
      });
      try {
        const answer = await callerFor((r) => wrong.fetch(r), 'lou')('/connections');
        expect(answer.status).toBe(502);
        expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
          'connections_unavailable',
        );
      } finally {
        await wrong.close();
      }
    });

    it('keeps the App Key routes to App Keys, and callback origins to origins', async () => {
      const path = `/api/deployments/me/users/lou/connections`;
      expect((await fetch(`${server.url}${path}`)).status).toBe(401);
      expect((await fetch(`${server.url}${path}`, { headers: { cookie: owner.cookie } })).status).toBe(401);
      for (const callbackOrigins of [
        ['https://host.test/path'],
        ['ftp://host.test'],
        ['https://host.test/'],
        'x',
      ]) {
        const refused = await asUser(owner.cookie, 'PUT', `/api/apps/${owner.appId}/callback-origins`, {
          callbackOrigins,
        });
        expect(refused.status, JSON.stringify(callbackOrigins)).toBe(400);
      }
      const read = await asUser(owner.cookie, 'GET', `/api/apps/${owner.appId}/callback-origins`);
      expect(await read.json()).toEqual({ callbackOrigins: [HOST] });
    });

    it('takes any user the wire takes, in any script, and refuses control characters and overlong ids', async () => {
      const list = (user: string) =>
        fetch(`${server.url}/api/deployments/me/users/${encodeURIComponent(user)}/connections`, {
          headers: { authorization: `Bearer ${owner.appKey}` },
        });
      // 256 characters are 256 code points: an emoji counts once, though it is two UTF-16 units.
      const emoji = (count: number) => '😀'.repeat(count);
      for (const user of ['josé', 'a b', '利用者', 'user:42@example.com', 'x'.repeat(256), emoji(256)]) {
        expect((await list(user)).status, user).toBe(200);
      }
      for (const user of ['tab\there', 'bell\u0007', 'x'.repeat(257), emoji(257)]) {
        const refused = await list(user);
        expect(refused.status, user).toBe(400);
        expect((await refused.json()).code).toBe('INVALID_REQUEST');
      }
      // The wire counts its subjects the same way, and the platform takes what the wire passes on.
      const wire = await testService(store, {
        principal: (request) => {
          const subject = request.headers.get('x-test-user');
          return subject ? { subject: decodeURIComponent(subject) } : null;
        },
        connections: cloudConnections({ platformUrl: server.url, appKey: owner.appKey }),
      });
      try {
        const as = (user: string) => callerFor((r) => wire.fetch(r), encodeURIComponent(user));
        const listed = await as(emoji(200))('/connections');
        expect(listed.status).toBe(200);
        expect(await listed.json()).toMatchObject({ connections: [] });
        const overlong = await as(emoji(257))('/connections');
        expect(overlong.status).toBe(500);
        expect((await overlong.json()).error.code).toBe('principal_failed');
        // A user id a URL path would resolve as a dot segment is refused, never sent: `..` would
        // otherwise reach the app's own connections.
        for (const user of ['.', '..']) {
          const dotted = await as(user)('/connections');
          expect(dotted.status, user).toBe(400);
          const body = await dotted.json();
          expect(body.error.code, user).toBe('validation_failed');
          expect(JSON.stringify(body), user).not.toContain('llm');
        }
        // A connection id that is one names no connection, and nothing is asked of the platform.
        const asked: string[] = [];
        const counted = cloudConnections({
          platformUrl: server.url,
          appKey: owner.appKey,
          fetch: (input, init) => {
            asked.push(String(input));
            return fetch(input, init);
          },
        });
        expect(await counted.get({ subject: 'ada' }, '..')).toBeNull();
        expect(await counted.disconnect({ subject: 'ada' }, '.')).toBeNull();
        expect(asked).toEqual([]);
      } finally {
        await wire.close();
      }
    });
  });
}
