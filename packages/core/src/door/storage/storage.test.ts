/**
 * The door's stores on every database: a code replayed while its first exchange is still running
 * leaves no live token behind, and the sweep keeps the tables from growing without bound.
 *
 * @see RFC 6749 §4.1.2 (code reuse); docs/door.md "Token and code lifetimes"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../test/support/stores.js';
import { ClientIdDocuments } from '../oauth/client-id-documents.js';
import { ClientStore } from './clients.js';
import { DoorSessionStore, SESSION_MAX_AGE_MS } from './sessions.js';
import { TokenFamilyStore } from './token-families.js';

const DAY = 24 * 60 * 60 * 1000;

for (const kind of STORE_KINDS) {
  describe(`door stores (${kind})`, () => {
    let store: TestStore;
    let offset = 0;
    const now = () => Date.now() + offset;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    const issueCode = (grants: TokenFamilyStore, subject: string) =>
      grants.issueCode({
        clientId: 'mcp_client_x',
        subject,
        redirectUri: 'https://a.example/cb',
        codeChallenge: 'c'.repeat(43),
        scopes: ['read'],
      });

    const RESOURCE = 'https://a.example/api/service/mcp';
    const options = { accessTtl: 3600, refresh: true };
    const grantsOf = (resource = RESOURCE) => new TokenFamilyStore(store.db, now, { resource });

    it('records a client read from its metadata document, so consents refer to it, and keeps it current', async () => {
      const clientId = 'https://client.example/client.json';
      let clientName = 'First name';
      // The transport tests use: a public address for the name, the document from memory.
      const documents = new ClientIdDocuments(
        {
          resolve: async () => ['20.0.0.1'],
          fetch: async () =>
            Response.json(
              { client_id: clientId, client_name: clientName, redirect_uris: ['http://127.0.0.1/cb'] },
              { headers: { 'cache-control': 'max-age=60' } },
            ),
        },
        now,
      );
      const clients = new ClientStore(store.db, now, 0, documents, RESOURCE);
      expect((await clients.lookup(clientId)).client?.clientName).toBe('First name');
      await clients.recordConsent('document-user', clientId, ['read']);
      await clients.openTransaction({
        clientId,
        subject: 'document-user',
        redirectUri: 'http://127.0.0.1:5000/cb',
        state: null,
        codeChallenge: 'c'.repeat(43),
        scopes: ['read'],
        resource: null,
      });
      clientName = 'Renamed';
      offset += 61_000;
      expect((await clients.lookup(clientId)).client?.clientName).toBe('Renamed');
      const row = await store.db
        .selectFrom('door_clients')
        .select(['client_name', 'redirect_uris'])
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ client_name: 'Renamed', redirect_uris: ['http://127.0.0.1/cb'] });
      expect(await clients.consentOf('document-user', clientId)).toEqual(['read']);
    });

    it('revokes what the first exchange issues when the code is replayed while that exchange runs', async () => {
      const grants = grantsOf();
      const code = await issueCode(grants, 'replay-during');
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let checking!: () => void;
      const inCheck = new Promise<void>((resolve) => {
        checking = resolve;
      });
      // The first exchange holds its claim open in its check while the replay arrives.
      const first = grants.redeemCode(
        code,
        async () => {
          checking();
          await gate;
        },
        options,
      );
      await inCheck;
      let replayAnswered = false;
      const replay = grants
        .redeemCode(code, () => {}, options)
        .finally(() => {
          replayAnswered = true;
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
      // The replay waits on the claim instead of slipping in before the family exists.
      expect(replayAnswered).toBe(false);
      release();
      const tokens = await first;
      expect(tokens).not.toBeNull();
      expect(await replay).toBeNull();
      expect(await grants.authenticate(tokens!.accessToken)).toBeNull();
      expect(
        (
          await grants.rotate(tokens!.refreshToken!, {
            clientId: 'mcp_client_x',
            scopes: null,
            registeredScopes: null,
          })
        ).ok,
      ).toBe(false);
    });

    it('revokes what the first exchange issued when the code is replayed afterwards', async () => {
      const grants = grantsOf();
      const code = await issueCode(grants, 'replay-after');
      const tokens = await grants.redeemCode(code, () => {}, options);
      expect(await grants.authenticate(tokens!.accessToken)).not.toBeNull();
      expect(await grants.redeemCode(code, () => {}, options)).toBeNull();
      expect(await grants.authenticate(tokens!.accessToken)).toBeNull();
    });

    it('spends a code whose presentation the check refuses', async () => {
      const grants = grantsOf();
      const code = await issueCode(grants, 'refused');
      const refusal = new Error('PKCE verification failed');
      await expect(
        grants.redeemCode(
          code,
          () => {
            throw refusal;
          },
          options,
        ),
      ).rejects.toBe(refusal);
      expect(await grants.redeemCode(code, () => {}, options)).toBeNull();
    });

    it("keeps a rotated refresh token's successor pair only sealed, under a key only that token gives", async () => {
      const grants = grantsOf();
      const first = await grants.startFamily(
        { clientId: 'mcp_client_x', subject: 'sealed-pair', scopes: ['read'] },
        { accessTtl: 3600, refresh: true },
      );
      const request = { clientId: 'mcp_client_x', scopes: null, registeredScopes: null };
      const rotated = await grants.rotate(first.refreshToken!, request);
      if (!rotated.ok) throw new Error('rotation refused');
      const rows = await store.db
        .selectFrom('door_tokens')
        .selectAll()
        .where('family_id', '=', first.familyId)
        .execute();
      const atRest = JSON.stringify(rows);
      for (const secret of [rotated.tokens.accessToken, rotated.tokens.refreshToken!]) {
        expect(atRest).not.toContain(secret);
        expect(atRest).not.toContain(secret.slice(7));
      }
      expect(rows.find((row) => row.successor_sealed !== null)).toBeDefined();
      // Presented again within the window, the token opens its own seal: the same pair.
      const again = await grants.rotate(first.refreshToken!, request);
      expect(again.ok && again.tokens.accessToken).toBe(rotated.tokens.accessToken);
    });

    it('keeps consents and sessions to the door that made them', async () => {
      const other = 'https://b.example/api/service/mcp';
      const [atA, atB] = [RESOURCE, other].map(
        (resource) => new ClientStore(store.db, now, 0, null, resource),
      );
      // A client id both doors know (a client registered before clients named their door).
      await store.db
        .insertInto('door_clients')
        .values({ client_id: 'mcp_client_shared', redirect_uris: '[]', metadata: '{}', resource: null })
        .execute();
      await atA!.recordConsent('consenting', 'mcp_client_shared', ['read']);
      expect(await atA!.consentOf('consenting', 'mcp_client_shared')).toEqual(['read']);
      expect(await atB!.consentOf('consenting', 'mcp_client_shared')).toBeNull();
      await atB!.withdrawConsent('consenting', 'mcp_client_shared');
      expect(await atA!.consentOf('consenting', 'mcp_client_shared')).toEqual(['read']);

      const session = await new DoorSessionStore(store.db, now, RESOURCE).open({
        subject: 'consenting',
        clientId: 'mcp_client_shared',
      });
      expect(await new DoorSessionStore(store.db, now, other).get(session)).toBeNull();
      expect(await new DoorSessionStore(store.db, now, RESOURCE).get(session)).not.toBeNull();
    });

    it('sweeps families left without tokens and sessions nobody ended, and keeps live ones', async () => {
      offset = 0;
      const grants = grantsOf();
      const sessions = new DoorSessionStore(store.db, now, RESOURCE);
      const shortLived = await grants.startFamily(
        { clientId: 'service', subject: 'sweep-dead', scopes: ['read'] },
        { accessTtl: 600, refresh: false },
      );
      const stale = await sessions.open({ subject: 'sweep-session', clientId: 'mcp_client_x' });
      offset = 2 * DAY;
      const fresh = await sessions.open({ subject: 'sweep-session', clientId: 'mcp_client_x' });
      const live = await grants.startFamily(
        { clientId: 'mcp_client_x', subject: 'sweep-live', scopes: ['read'] },
        { accessTtl: 3600, refresh: true },
      );
      offset = SESSION_MAX_AGE_MS + DAY;
      await grants.sweep();
      await sessions.sweep();
      const families = await store.db
        .selectFrom('door_grant_families')
        .select('id')
        .where('id', 'in', [live!.familyId, shortLived!.familyId])
        .execute();
      // The live family still has its refresh token (30 days); the other has nothing left.
      expect(families.map((f) => f.id)).toEqual([live!.familyId]);
      expect(await sessions.get(stale)).toBeNull();
      expect(await sessions.get(fresh)).toEqual({ subject: 'sweep-session', clientId: 'mcp_client_x' });
      offset = 0;
    });
  });
}
