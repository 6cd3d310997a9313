/**
 * MCP authorization, token audience binding: the MCP server accepts only tokens meant for itself.
 * Local mode: two doors with different canonical URLs on one database (on Postgres, each on its
 * own store handle). remoteAs mode: the `aud` claim of an external issuer's JWT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeIdp, startFakeIdp } from '../../../support/fake-idp.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { openSharedDatabase, type SharedDatabase } from '../../support/instances.js';
import { INITIALIZE_PARAMS, rpc, tokensFor } from '../../support/oauth-flow.js';

const SERVICE_KEY = `mcp_svc_${'a'.repeat(43)}`;

for (const kind of STORE_KINDS) {
  describe(`token audience at the MCP endpoint (${kind})`, () => {
    let database: SharedDatabase;
    let doorA: DoorHost;
    let doorB: DoorHost;

    beforeAll(async () => {
      database = await openSharedDatabase(kind);
      // Both doors accept the same service key under the same client id: only the audience differs.
      const mcp = { serviceAuth: { keys: [SERVICE_KEY] } };
      doorA = await startDoorHost(database.store, { mcp });
      doorB = await startDoorHost(database.second, { mcp });
    });
    afterAll(async () => {
      await doorA?.close();
      await doorB?.close();
      await database?.dispose();
    });

    const expectRefusedAtB = async (token: string) => {
      const answer = await rpc(doorB, token, 'tools/list');
      expect(answer.status).toBe(401);
      const challenge = answer.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer /);
      expect(challenge).toContain('error="invalid_token"');
      expect(challenge).toContain(`resource_metadata="${doorB.door.urls.protectedResourceMetadata}"`);
    };

    const serviceToken = async (door: DoorHost, subject: string) => {
      const response = await fetch(`${door.url}/api/service/mcp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          client_id: 'service',
          client_secret: SERVICE_KEY,
          subject_token: subject,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        }),
      });
      return ((await response.json()) as { access_token: string }).access_token;
    };

    it('§Token Audience Binding and Validation: an access token issued by another door is refused (401 invalid_token, Bearer challenge)', async () => {
      doorB.users.set('user-1', { subject: 'user-1' });
      const tokens = await tokensFor(doorA);
      expect((await rpc(doorA, tokens.access_token, 'tools/list')).status).toBe(200);
      await expectRefusedAtB(tokens.access_token);
    });

    it('§Token Audience Binding and Validation: a service-key token of another door is refused though key and client id match', async () => {
      doorA.users.set('backend-user', { subject: 'backend-user' });
      doorB.users.set('backend-user', { subject: 'backend-user' });
      const token = await serviceToken(doorA, 'backend-user');
      expect((await rpc(doorA, token, 'tools/list')).status).toBe(200);
      await expectRefusedAtB(token);
      expect((await rpc(doorB, await serviceToken(doorB, 'backend-user'), 'tools/list')).status).toBe(200);
    });

    it('§Token Audience Binding and Validation: a session opened at another door is not found (404), even for the same user and client', async () => {
      doorA.users.set('session-user', { subject: 'session-user' });
      doorB.users.set('session-user', { subject: 'session-user' });
      const opened = await rpc(
        doorA,
        await serviceToken(doorA, 'session-user'),
        'initialize',
        INITIALIZE_PARAMS,
      );
      const sessionId = opened.headers.get('mcp-session-id');
      expect(sessionId).toMatch(/^mcp_ses_/);
      const atB = await rpc(
        doorB,
        await serviceToken(doorB, 'session-user'),
        'tools/list',
        {},
        {
          'mcp-session-id': sessionId!,
        },
      );
      expect(atB.status).toBe(404);
    });
  });
}

describe('token audience of remoteAs JWTs', () => {
  const AUDIENCE = 'https://notes.example/api/service/mcp';
  let store: TestStore;
  let idp: FakeIdp;
  let host: DoorHost;

  beforeAll(async () => {
    store = await openTestStore();
    idp = await startFakeIdp();
    host = await startDoorHost(store, {
      mcp: {
        remoteAs: {
          issuer: idp.url,
          audience: AUDIENCE,
          jwksUri: `${idp.url}/auth/v1/.well-known/jwks.json`,
        },
      },
    });
    host.users.set('remote-user', { subject: 'remote-user' });
  });
  afterAll(async () => {
    await host?.close();
    await idp?.close();
    await store?.dispose();
  });

  const listWith = async (aud: unknown) =>
    rpc(host, await idp.sign({ iss: idp.url, aud, sub: 'remote-user', scope: 'read' }), 'tools/list');

  it('§Token Audience Binding and Validation: aud naming this server (a string, or an array of it alone) is accepted', async () => {
    expect((await listWith(AUDIENCE)).status).toBe(200);
    expect((await listWith([AUDIENCE])).status).toBe(200);
  });

  it('§Token Audience Binding and Validation: an aud array naming other audiences besides this server is refused (401)', async () => {
    const answer = await listWith([AUDIENCE, 'https://other-api.example']);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('§Token Audience Binding and Validation: an aud that does not name this server is refused (401)', async () => {
    expect((await listWith('https://other-api.example')).status).toBe(401);
    expect((await listWith(['https://other-api.example'])).status).toBe(401);
    expect((await listWith(`${AUDIENCE}/`)).status).toBe(401);
  });
});
