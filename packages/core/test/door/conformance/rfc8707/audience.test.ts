/**
 * RFC 8707 at the token endpoint: what one door issues is bound to that door's canonical MCP URL.
 * Two doors with different canonical URLs share one database (on Postgres, each on its own store
 * handle); nothing one issued or registered is honoured by the other, and nothing presented to
 * the wrong door is spent or revoked at the right one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { openSharedDatabase, type SharedDatabase } from '../../support/instances.js';
import {
  authorizeCode,
  authorizeUrl,
  exchange,
  openConsent,
  pkce,
  register,
  rpc,
  signIn,
  tokenRequest,
  tokensFor,
} from '../../support/oauth-flow.js';

for (const kind of STORE_KINDS) {
  describe(`token audience at the token endpoint (${kind})`, () => {
    let database: SharedDatabase;
    let doorA: DoorHost;
    let doorB: DoorHost;

    beforeAll(async () => {
      database = await openSharedDatabase(kind);
      doorA = await startDoorHost(database.store);
      doorB = await startDoorHost(database.second);
    });
    afterAll(async () => {
      await doorA?.close();
      await doorB?.close();
      await database?.dispose();
    });

    const errorOf = async (response: Response) => ({ status: response.status, ...(await response.json()) });

    it('§2 the doors have different canonical URLs (each the resource of its tokens)', () => {
      expect(doorA.door.urls.resource).not.toBe(doorB.door.urls.resource);
    });

    it('§2.2 a refresh token issued by another door is refused (invalid_grant) and stays valid at its own', async () => {
      const tokens = await tokensFor(doorA);
      const clientAtB = await register(doorB);
      const refused = await tokenRequest(doorB, {
        grant_type: 'refresh_token',
        client_id: clientAtB.clientId,
        refresh_token: tokens.refresh_token!,
      });
      expect(await errorOf(refused)).toMatchObject({ status: 400, error: 'invalid_grant' });
      // Neither spent nor taken for a reuse: the family lives on at its own door.
      expect((await rpc(doorA, tokens.access_token, 'tools/list')).status).toBe(200);
      const own = await tokenRequest(doorA, {
        grant_type: 'refresh_token',
        client_id: tokens.client.clientId,
        refresh_token: tokens.refresh_token!,
      });
      expect(own.status).toBe(200);
    });

    it('§2.2 an authorization code issued by another door is refused (invalid_grant) and stays redeemable at its own', async () => {
      const flow = await authorizeCode(doorA, 'code-owner');
      const clientAtB = await register(doorB);
      const refused = await tokenRequest(doorB, {
        grant_type: 'authorization_code',
        code: flow.code,
        client_id: clientAtB.clientId,
        redirect_uri: clientAtB.redirectUri,
        code_verifier: flow.pkce.verifier,
      });
      expect(await errorOf(refused)).toMatchObject({
        status: 400,
        error: 'invalid_grant',
        error_description: 'Authorization code is invalid or expired',
      });
      const tokens = await exchange(doorA, flow);
      expect((await rpc(doorA, tokens.access_token, 'tools/list')).status).toBe(200);
    });

    it('§2 a client registered at another door is refused at the token endpoint (401 invalid_client)', async () => {
      const tokens = await tokensFor(doorA);
      const asRefresh = await tokenRequest(doorB, {
        grant_type: 'refresh_token',
        client_id: tokens.client.clientId,
        refresh_token: tokens.refresh_token!,
      });
      expect(await errorOf(asRefresh)).toMatchObject({ status: 401, error: 'invalid_client' });
      const flow = await authorizeCode(doorA, 'client-owner');
      const asCode = await tokenRequest(doorB, {
        grant_type: 'authorization_code',
        code: flow.code,
        client_id: flow.client.clientId,
        redirect_uri: flow.client.redirectUri,
        code_verifier: flow.pkce.verifier,
      });
      expect(await errorOf(asCode)).toMatchObject({ status: 401, error: 'invalid_client' });
      expect((await exchange(doorA, flow)).access_token).toMatch(/^mcp_at_/);
    });

    it('§2 consent given at one door does not carry to another: its client gets no code there', async () => {
      const { client } = await authorizeCode(doorA, 'consenting-user');
      const cookie = signIn(doorB, 'consenting-user');
      const atB = await openConsent(authorizeUrl(doorB, client, pkce().challenge), cookie);
      expect(atB.response.status).toBe(400);
      expect(atB.response.headers.get('location')).toBeNull();
      expect(atB.transaction).toBe('');
    });

    it('§2 one resource written two ways (case, a trailing slash) is taken alike by /authorize and /token', async () => {
      const canonical = new URL(doorA.door.urls.resource);
      const written = `HTTP://${canonical.host.toUpperCase()}${canonical.pathname}/`;
      const flow = await authorizeCode(doorA, 'resource-writer', undefined, { resource: written });
      const exchanged = await tokenRequest(doorA, {
        grant_type: 'authorization_code',
        code: flow.code,
        client_id: flow.client.clientId,
        redirect_uri: flow.client.redirectUri,
        code_verifier: flow.pkce.verifier,
        resource: written,
      });
      expect(exchanged.status).toBe(200);
      const { refresh_token } = await exchanged.json();
      const refreshed = await tokenRequest(doorA, {
        grant_type: 'refresh_token',
        client_id: flow.client.clientId,
        refresh_token,
        resource: written,
      });
      expect(refreshed.status).toBe(200);
    });

    it('§2.2 a resource naming another door is refused at the token endpoint (invalid_target)', async () => {
      const tokens = await tokensFor(doorB);
      const refused = await tokenRequest(doorB, {
        grant_type: 'refresh_token',
        client_id: tokens.client.clientId,
        refresh_token: tokens.refresh_token!,
        resource: doorA.door.urls.resource,
      });
      expect(await errorOf(refused)).toMatchObject({ status: 400, error: 'invalid_target' });
    });
  });
}
