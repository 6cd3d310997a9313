/**
 * Discovery: RFC 9728 and RFC 8414 metadata and the server card, at exactly six paths; every other
 * `/.well-known` path falls through to the host; canonical URLs come only from the configured
 * base URL, whatever Host or X-Forwarded-* headers say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDoor } from '../../src/door/index.js';
import { silentLogger } from '../../src/http/logger.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const json = async (url: string, init?: RequestInit) => {
  const response = await fetch(url, init);
  return { response, body: (await response.json()) as Record<string, unknown> };
};

describe('discovery documents', () => {
  it('serves RFC 9728 protected-resource metadata naming the door as its authorization server', async () => {
    const { response, body } = await json(`${host.url}/.well-known/oauth-protected-resource/api/service/mcp`);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(body).toEqual({
      resource: `${host.url}/api/service/mcp`,
      authorization_servers: [`${host.url}/api/service/mcp`],
      scopes_supported: ['read', 'write'],
      bearer_methods_supported: ['header'],
      resource_name: 'Notes <Test>',
      resource_documentation: `${host.url}/api/service/mcp/connect`,
    });
  });

  it('serves RFC 8414 metadata with the revoke endpoint, read and write scopes and exactly S256', async () => {
    const { response, body } = await json(
      `${host.url}/.well-known/oauth-authorization-server/api/service/mcp`,
    );
    expect(response.status).toBe(200);
    const mcp = `${host.url}/api/service/mcp`;
    expect(body).toMatchObject({
      issuer: mcp,
      authorization_endpoint: `${mcp}/authorize`,
      token_endpoint: `${mcp}/token`,
      registration_endpoint: `${mcp}/register`,
      revocation_endpoint: `${mcp}/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: ['read', 'write'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(body.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('answers the same documents at the base-path spelling under the MCP path', async () => {
    const rootPrm = await json(`${host.url}/.well-known/oauth-protected-resource/api/service/mcp`);
    const prm = await json(`${host.url}/api/service/mcp/.well-known/oauth-protected-resource`);
    expect(prm.body).toEqual(rootPrm.body);
    const rootAsm = await json(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`);
    const asm = await json(`${host.url}/api/service/mcp/.well-known/oauth-authorization-server`);
    expect(asm.body).toEqual(rootAsm.body);
  });

  it('serves the server card at both of its paths', async () => {
    const card = await json(`${host.url}/.well-known/mcp/server-card.json`);
    const alias = await json(`${host.url}/.well-known/mcp-server-card`);
    expect(card.response.status).toBe(200);
    expect(alias.body).toEqual(card.body);
    expect(card.body).toMatchObject({
      protocolVersion: '2025-11-25',
      serverInfo: { name: 'Notes <Test>' },
      transport: { type: 'streamable-http', endpoint: `${host.url}/api/service/mcp` },
      authentication: { required: true, schemes: ['oauth2'] },
    });
  });

  it('matches the seven paths exactly and never as prefixes, leaving every other /.well-known path to the host', async () => {
    // MCP 2025-03-26 clients look for RFC 8414 metadata at the bare origin: the door answers there.
    const bare = await json(`${host.url}/.well-known/oauth-authorization-server`);
    const pathAware = await json(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`);
    expect(bare.response.status).toBe(200);
    expect(bare.body).toEqual(pathAware.body);
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-authorization-server/',
      '/.well-known/oauth-protected-resource/api/service/mcp/extra',
      '/.well-known/oauth-authorization-server/api/service/mcp/',
      '/.well-known/mcp/server-card.json.bak',
      '/.well-known/mcp-server-card/x',
      '/.well-known/openid-configuration',
      '/.well-known/security.txt',
    ]) {
      const response = await fetch(`${host.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).toBe('host 404');
    }
    expect(
      await host.door.wellKnown(new Request(`${host.url}/.well-known/apple-app-site-association`)),
    ).toBeNull();
    // Under the MCP path every unknown name is the door's own 404.
    const unknown = await fetch(`${host.url}/api/service/mcp/.well-known/openid-configuration`);
    expect(unknown.status).toBe(404);
  });

  it('leaves non-door paths to the host', async () => {
    expect(await host.door.handle(new Request(`${host.url}/api/service/threads`))).toBeNull();
    expect(await host.door.handle(new Request(`${host.url}/api/service/mcpx`))).toBeNull();
  });

  it('ignores Host and X-Forwarded-* headers: a spoofed host never reaches a discovery document', async () => {
    const spoof = {
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
      forwarded: 'host=evil.example;proto=https',
    };
    for (const path of [
      '/.well-known/oauth-protected-resource/api/service/mcp',
      '/.well-known/oauth-authorization-server/api/service/mcp',
      '/.well-known/mcp/server-card.json',
    ]) {
      const text = await (await fetch(`${host.url}${path}`, { headers: spoof })).text();
      expect(text).not.toContain('evil.example');
      expect(text).toContain(host.url);
    }
    // A request addressed to another Host gets the configured URLs too.
    const request = new Request('http://evil.example/.well-known/oauth-protected-resource/api/service/mcp', {
      headers: spoof,
    });
    const body = await (await host.door.wellKnown(request))!.json();
    expect(body.resource).toBe(`${host.url}/api/service/mcp`);
    const challenge = await fetch(`${host.url}/api/service/mcp`, { method: 'POST', headers: spoof });
    expect(challenge.headers.get('www-authenticate')).toContain(
      `resource_metadata="${host.url}/.well-known/oauth-protected-resource/api/service/mcp"`,
    );
  });

  it('puts a base URL path prefix into every URL and discovery path', async () => {
    const door = createDoor({
      mcp: { baseUrl: 'HTTPS://Example.COM:443/app/' },
      oauth: { session: () => ({ subject: 'x' }), principal: () => null },
      store,
      logger: silentLogger,
      env: {},
    });
    expect(door.urls.resource).toBe('https://example.com/app/api/service/mcp');
    const response = await door.wellKnown(
      new Request('https://example.com/.well-known/oauth-authorization-server/app/api/service/mcp'),
    );
    expect((await response!.json()).token_endpoint).toBe('https://example.com/app/api/service/mcp/token');
    expect(
      await door.wellKnown(
        new Request('https://example.com/.well-known/oauth-authorization-server/api/service/mcp'),
      ),
    ).toBeNull();
  });

  it('answers the 401 challenge with resource_metadata and scope on an unauthenticated MCP request', async () => {
    const response = await fetch(`${host.url}/api/service/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${host.url}/.well-known/oauth-protected-resource/api/service/mcp", scope="read write"`,
    );
  });
});
