/**
 * MCP 2025-11-25 "Client ID Metadata Documents": a client whose `client_id` is an HTTPS URL is
 * known by the document published there, fetched under SSRF guards, and cached as its
 * `Cache-Control` says (within bounds). Dynamic registration stays beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import {
  claudeCodeDocument,
  type DocumentServer,
  startDocumentServer,
  vsCodeDocument,
} from '../../support/client-documents.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import {
  authorizeCode,
  authorizeUrl,
  exchange,
  openConsent,
  pkce,
  rpc,
  signIn,
  type TestClient,
} from '../../support/oauth-flow.js';

let store: TestStore;
let documents: DocumentServer;
let host: DoorHost;
const { challenge } = pkce();

beforeAll(async () => {
  store = await openTestStore();
  documents = await startDocumentServer();
  host = await startDoorHost(store, { clientDocumentTransport: documents.transport });
});
afterAll(async () => {
  await host?.close();
  await documents?.close();
  await store?.dispose();
});

/** GETs an authorize URL as a signed-in user and expects the 400 page: no redirect anywhere. */
async function refusedPage(client: TestClient): Promise<string> {
  const response = await fetch(authorizeUrl(host, client, challenge), {
    headers: { cookie: signIn(host, 'user-1') },
    redirect: 'manual',
  });
  expect(response.status).toBe(400);
  expect(response.headers.get('location')).toBeNull();
  expect(response.headers.get('content-type')).toContain('text/html');
  return response.text();
}

describe('discovery', () => {
  it('§Discovery the authorization server metadata advertises client_id_metadata_document_supported, registration stays', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`);
    const metadata = await response.json();
    expect(metadata.client_id_metadata_document_supported).toBe(true);
    expect(metadata.registration_endpoint).toBe(`${host.url}/api/service/mcp/register`);
  });
});

describe('a client known by its metadata document', () => {
  it("§Client ID Metadata Documents Claude Code's document: authorization on any loopback port, consent naming it, tokens, tools", async () => {
    const clientId = documents.serve('/oauth/claude-code-client-metadata', {
      body: claudeCodeDocument('https://client.example/oauth/claude-code-client-metadata'),
    });
    const client = { clientId, redirectUri: 'http://localhost:3118/callback' };
    const ticket = await openConsent(authorizeUrl(host, client, challenge), signIn(host, 'user-1'));
    expect(ticket.response.status).toBe(200);
    expect(ticket.html).toContain('Claude Code');
    // The page names who published the identity and that the answer goes to this device.
    expect(ticket.html).toContain('Identity published by <strong>client.example</strong>');
    expect(ticket.html).toContain('an app on this device, at <strong>localhost:3118</strong>');

    const flow = await authorizeCode(host, 'user-1', client);
    const tokens = await exchange(host, flow);
    expect(tokens.token_type).toBe('Bearer');
    const listed = await rpc(host, tokens.access_token, 'tools/list');
    expect(listed.body?.result.tools.length).toBeGreaterThan(0);
    // One fetch served the consent page, the approval and the token request.
    expect(documents.hits(clientId)).toBe(1);
  });

  it("§Client ID Metadata Documents VS Code's document, which lists a device-code grant the door does not offer, is accepted", async () => {
    const clientId = documents.serve('/oauth/client-metadata.json', {
      body: vsCodeDocument('https://client.example/oauth/client-metadata.json'),
    });
    for (const redirectUri of ['http://127.0.0.1:33418/', 'http://127.0.0.1:50123/']) {
      const flow = await authorizeCode(host, 'user-1', { clientId, redirectUri });
      expect((await exchange(host, flow)).access_token).toMatch(/^mcp_at_/);
    }
  });

  it('§Client ID Metadata Documents redirect URIs are validated against the document', async () => {
    const clientId = documents.serve('/redirects.json', {
      body: claudeCodeDocument('https://client.example/redirects.json'),
    });
    const page = await refusedPage({ clientId, redirectUri: 'https://evil.example/callback' });
    expect(page).toContain('redirect_uri does not match');
  });

  it('§Client ID Metadata Documents the token endpoint refuses a client_id URL whose document cannot be read (401 invalid_client)', async () => {
    const clientId = documents.serve('/token-only.json', {
      body: claudeCodeDocument('https://client.example/token-only.json'),
    });
    const flow = await authorizeCode(host, 'user-1', {
      clientId,
      redirectUri: 'http://127.0.0.1:40000/callback',
    });
    const wrongClient = await fetch(`${host.url}/api/service/mcp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: flow.code,
        client_id: 'https://unresolvable.example/client.json',
        redirect_uri: flow.client.redirectUri,
        code_verifier: flow.pkce.verifier,
      }),
    });
    expect(wrongClient.status).toBe(401);
    expect((await wrongClient.json()).error).toBe('invalid_client');
  });
});

describe('guards on fetching a URL a stranger chose (SSRF)', () => {
  it.each([
    ['a private address', 'private.example'],
    ['a loopback address', 'loopback.example'],
    ['a link-local (cloud metadata) address', 'link-local.example'],
    ['a unique-local IPv6 address', 'unique-local.example'],
    ['a public and a private address', 'split.example'],
  ])(
    '§Authorization Server Abuse Protection a host resolving to %s is refused, never fetched',
    async (_, name) => {
      const clientId = documents.serve(
        '/client.json',
        { body: claudeCodeDocument(`https://${name}/client.json`) },
        name,
      );
      const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
      expect(page).toContain('resolves to a private, loopback or link-local address');
      expect(documents.fetched).not.toContain(clientId);
      expect(documents.hits(clientId)).toBe(0);
    },
  );

  it.each([
    ['an IPv4 loopback literal', 'https://127.0.0.1/client.json'],
    ['an IPv6 loopback literal', 'https://[::1]/client.json'],
    ['a metadata-service literal', 'https://169.254.169.254/latest/meta-data'],
  ])(
    '§Authorization Server Abuse Protection %s as the host is refused, never fetched',
    async (_, clientId) => {
      const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
      expect(page).toContain('resolves to a private, loopback or link-local address');
      expect(documents.fetched).not.toContain(clientId);
    },
  );

  it.each([
    ['plain http', 'http://client.example/client.json', 'must use https'],
    ['no path', 'https://client.example/', 'must have a path'],
    ['a dot segment', 'https://client.example/a/../client.json', 'must not contain . or .. path segments'],
    ['a fragment', 'https://client.example/client.json#x', 'must not contain a fragment'],
    ['userinfo', 'https://user@client.example/client.json', 'must not contain userinfo'],
    ['an unnormalized host', 'https://CLIENT.example/client.json', 'normalized form'],
  ])(
    '§Client ID Metadata Documents a client_id URL with %s is refused before anything is fetched',
    async (_, clientId, text) => {
      const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
      expect(page).toContain(text);
      expect(documents.fetched).not.toContain(clientId);
    },
  );

  it('§Client ID Metadata Documents a document whose client_id is not its URL is refused', async () => {
    const clientId = documents.serve('/impostor.json', {
      body: claudeCodeDocument('https://client.example/oauth/claude-code-client-metadata'),
    });
    const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
    expect(page).toContain('its client_id is not the URL it was fetched from');
  });

  it('§Authorization Server Abuse Protection a redirect is refused and its target never fetched', async () => {
    const target = documents.serve('/target.json', {
      body: claudeCodeDocument('https://client.example/target.json'),
    });
    const clientId = documents.serve('/moved.json', { status: 302, headers: { location: target } });
    const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
    expect(page).toContain('answered with a redirect, which the door does not follow');
    expect(documents.hits(target)).toBe(0);
  });

  it.each([
    [
      'larger than 5 KiB',
      { body: { ...claudeCodeDocument(''), padding: 'x'.repeat(6000) } },
      'larger than 5120 bytes',
    ],
    [
      'not served as JSON',
      { headers: { 'content-type': 'text/html' }, body: '<html></html>' },
      'not served as application/json',
    ],
    ['not JSON at all', { body: '{"client_id":' }, 'not valid JSON'],
    ['answered 404', { status: 404, body: {} }, 'answered HTTP 404'],
  ])('§Authorization Server Abuse Protection a document %s is refused', async (_, document, text) => {
    const clientId = documents.serve(`/bad-${text.replaceAll(' ', '-')}.json`, document as never);
    expect(await refusedPage({ clientId, redirectUri: 'http://localhost/callback' })).toContain(text);
  });

  it.each([
    ['a client_secret', { client_secret: 's3cret' }, 'must not carry a client_secret'],
    [
      'a shared-secret auth method',
      { token_endpoint_auth_method: 'client_secret_basic' },
      'token_endpoint_auth_method must be none',
    ],
    ['no client_name', { client_name: undefined }, 'must name the client (client_name)'],
    [
      'a javascript: redirect URI',
      { redirect_uris: ['javascript:alert(1)'] },
      'must not use the javascript: scheme',
    ],
  ])('§Client ID Metadata Documents a document with %s is refused', async (label, change, text) => {
    const path = `/document-with-${label.replaceAll(/[^a-z]/g, '-')}.json`;
    const clientId = `https://client.example${path}`;
    documents.serve(path, { body: { ...claudeCodeDocument(clientId), ...change } });
    expect(await refusedPage({ clientId, redirectUri: 'http://localhost/callback' })).toContain(text);
  });

  it('§Authorization Server Abuse Protection a document that does not answer within 5 seconds is refused', async () => {
    const clientId = documents.serve('/slow.json', { hang: true });
    const started = Date.now();
    const page = await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
    expect(page).toContain('did not answer within 5 seconds');
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);
});

describe('caching', () => {
  const visit = (clientId: string) =>
    openConsent(
      authorizeUrl(host, { clientId, redirectUri: 'http://localhost/callback' }, challenge),
      signIn(host, 'user-1'),
    );

  it('§Client ID Metadata Documents a document is cached for its max-age, then fetched again', async () => {
    const clientId = 'https://client.example/cached-10-minutes.json';
    documents.serve('/cached-10-minutes.json', {
      headers: { 'cache-control': 'public, max-age=600' },
      body: claudeCodeDocument(clientId),
    });
    await visit(clientId);
    await visit(clientId);
    expect(documents.hits(clientId)).toBe(1);
    host.clock.advance(601_000);
    expect((await visit(clientId)).response.status).toBe(200);
    expect(documents.hits(clientId)).toBe(2);
  });

  it('§Client ID Metadata Documents no-store still holds a document for a minute; a huge max-age for a day at most', async () => {
    const brief = 'https://client.example/no-store.json';
    documents.serve('/no-store.json', {
      headers: { 'cache-control': 'no-store' },
      body: claudeCodeDocument(brief),
    });
    const long = 'https://client.example/a-year.json';
    documents.serve('/a-year.json', {
      headers: { 'cache-control': 'max-age=31536000' },
      body: claudeCodeDocument(long),
    });
    await visit(brief);
    await visit(long);
    host.clock.advance(30_000);
    await visit(brief);
    expect(documents.hits(brief)).toBe(1);
    host.clock.advance(31_000);
    await visit(brief);
    expect(documents.hits(brief)).toBe(2);
    host.clock.advance(24 * 60 * 60_000);
    await visit(long);
    expect(documents.hits(long)).toBe(2);
  });

  it('§Authorization Server Abuse Protection a failed fetch is remembered for a minute, so a bad client id cannot hammer its host', async () => {
    const clientId = 'https://client.example/broken-then-fixed.json';
    documents.serve('/broken-then-fixed.json', { status: 500, body: {} });
    await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
    documents.serve('/broken-then-fixed.json', { body: claudeCodeDocument(clientId) });
    await refusedPage({ clientId, redirectUri: 'http://localhost/callback' });
    expect(documents.hits(clientId)).toBe(1);
    host.clock.advance(61_000);
    expect((await visit(clientId)).response.status).toBe(200);
  });
});
