/**
 * RFC 7591 dynamic registration: public clients; https redirect URIs, or http on loopback only;
 * no fragment or userinfo; clear `invalid_redirect_uri` / `invalid_client_metadata` errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const register = (body: unknown, contentType = 'application/json') =>
  fetch(`${host.url}/api/service/mcp/register`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('dynamic client registration', () => {
  it('registers a public client and answers 201 with its metadata and no secret', async () => {
    const response = await register({
      client_name: 'Claude',
      redirect_uris: ['https://claude.example/api/mcp/auth_callback', 'http://127.0.0.1:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'read write',
      unknown_member: 'dropped',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.json();
    expect(body).toEqual({
      client_id: expect.stringMatching(/^mcp_client_[A-Za-z0-9_-]{43}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'Claude',
      redirect_uris: ['https://claude.example/api/mcp/auth_callback', 'http://127.0.0.1:33418/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'read write',
    });
    expect(body).not.toHaveProperty('client_secret');
  });

  it('accepts offline_access in scope and drops it: the door issues refresh tokens anyway', async () => {
    const reader = await register({
      redirect_uris: ['http://127.0.0.1/callback'],
      scope: 'read offline_access',
    });
    expect(reader.status).toBe(201);
    expect((await reader.json()).scope).toBe('read');
    const alone = await register({ redirect_uris: ['http://127.0.0.1/callback'], scope: 'offline_access' });
    expect(alone.status).toBe(201);
    expect(await alone.json()).not.toHaveProperty('scope');
  });

  it('answers a request for a secret-based method as a public client (token_endpoint_auth_method none)', async () => {
    const response = await register({
      redirect_uris: ['https://a.example/cb'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(response.status).toBe(201);
    const body = await response.json();
    expect(body.token_endpoint_auth_method).toBe('none');
    expect(body).not.toHaveProperty('client_secret');
  });

  it.each([
    [{}, 'redirect_uris is required'],
    [{ redirect_uris: [] }, 'redirect_uris is required'],
    [{ redirect_uris: 'https://a.example/cb' }, 'redirect_uris is required'],
    [{ redirect_uris: [42] }, 'non-empty strings'],
    [{ redirect_uris: ['http://a.example/cb'] }, 'must use https'],
    [{ redirect_uris: ['http://192.168.1.5/cb'] }, 'must use https'],
    [{ redirect_uris: ['javascript:alert(1)'] }, 'must not use the javascript: scheme'],
    [{ redirect_uris: ['data:text/html,hi'] }, 'must not use the data: scheme'],
    [{ redirect_uris: ['file:///etc/passwd'] }, 'must not use the file: scheme'],
    [{ redirect_uris: ['https://a.example/cb#frag'] }, 'fragment'],
    [{ redirect_uris: ['https://user:pass@a.example/cb'] }, 'userinfo'],
    [{ redirect_uris: ['/relative'] }, 'not an absolute URL'],
    [{ redirect_uris: [' https://a.example/cb'] }, 'whitespace or control characters'],
    [{ redirect_uris: ['https://a.example/c\tb'] }, 'whitespace or control characters'],
    [{ redirect_uris: ['https://a.example/cb\n'] }, 'whitespace or control characters'],
    [{ redirect_uris: ['https://a.example/c\u007fb'] }, 'whitespace or control characters'],
    // Matched as written, but a browser would be sent to the parser's reading of it.
    [
      { redirect_uris: ['https:\\\\evil.example\\cb'] },
      'written as a URL parser writes it (https://evil.example/cb)',
    ],
    [{ redirect_uris: ['https:evil.example/cb'] }, 'written as a URL parser writes it'],
    [{ redirect_uris: ['https://EVIL.example/cb'] }, 'written as a URL parser writes it'],
    [{ redirect_uris: ['https://a.example:443/cb'] }, 'written as a URL parser writes it'],
    [{ redirect_uris: ['https://a.example/./cb/../cb'] }, 'written as a URL parser writes it'],
    [{ redirect_uris: ['http://LOCALHOST:8080/cb'] }, 'written as a URL parser writes it'],
  ])('refuses %j with invalid_redirect_uri', async (body, text) => {
    const response = await register(body);
    expect(response.status).toBe(400);
    const error = await response.json();
    expect(error.error).toBe('invalid_redirect_uri');
    expect(error.error_description).toContain(text);
  });

  it('accepts http redirect URIs on loopback hosts', async () => {
    for (const uri of [
      'http://127.0.0.1/cb',
      'http://localhost:8080/cb',
      'http://[::1]:9/cb',
      // An empty path, as VS Code registers its loopback URI: the parser writes it `/`.
      'http://127.0.0.1:33418',
      'https://app.example',
      'https://app.example?from=mcp',
    ]) {
      expect((await register({ redirect_uris: [uri] })).status, uri).toBe(201);
    }
  });

  it.each([
    [{ grant_types: ['client_credentials'] }, 'grant_types'],
    [{ grant_types: ['refresh_token'] }, 'authorization_code'],
    [{ response_types: ['token'] }, 'response_types'],
    [{ token_endpoint_auth_method: 'private_key_jwt' }, 'token_endpoint_auth_method'],
    [{ client_name: 42 }, 'client_name must be a string'],
    [{ client_name: 'x'.repeat(201) }, 'client_name is too long'],
    [{ scope: 'read admin' }, 'unknown scope admin'],
    [{ logo_uri: 'javascript:alert(1)' }, 'logo_uri must be an https URL'],
  ])('refuses %j with invalid_client_metadata', async (extra, text) => {
    const response = await register({ redirect_uris: ['https://a.example/cb'], ...extra });
    expect(response.status).toBe(400);
    const error = await response.json();
    expect(error.error).toBe('invalid_client_metadata');
    expect(error.error_description).toContain(text);
  });

  it('refuses malformed JSON, a non-object body and another content type with a 400', async () => {
    for (const [body, type] of [
      ['{not json', 'application/json'],
      ['[1,2]', 'application/json'],
      ['null', 'application/json'],
      ['redirect_uris=https://a.example/cb', 'application/x-www-form-urlencoded'],
    ] as const) {
      const response = await register(body, type);
      expect(response.status, body).toBe(400);
      expect((await response.json()).error).toBe('invalid_client_metadata');
    }
  });

  it('refuses a body over 16 KiB with 413', async () => {
    const response = await register({
      redirect_uris: ['https://a.example/cb'],
      client_name: 'x'.repeat(20_000),
    });
    expect(response.status).toBe(413);
  });

  it('refuses NUL characters and unpaired surrogates anywhere in the metadata with a 400, never a 500', async () => {
    for (const body of [
      '{"client_name":"a\\u0000b","redirect_uris":["https://a.example/cb"]}',
      '{"client_name":"\\ud800","redirect_uris":["https://a.example/cb"]}',
      '{"software_id":"x\\udc00y","redirect_uris":["https://a.example/cb"]}',
    ]) {
      const response = await register(body);
      expect(response.status, body).toBe(400);
      expect(await response.json()).toEqual({
        error: 'invalid_client_metadata',
        error_description: 'Metadata must not contain NUL characters or invalid Unicode',
      });
    }
  });

  it('answers the CORS preflight of browser clients, and 405 to other methods', async () => {
    const preflight = await fetch(`${host.url}/api/service/mcp/register`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://inspector.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Content-Type');
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await fetch(`${host.url}/api/service/mcp/register`, { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('POST, OPTIONS');
    }
  });
});

describe('registration rate limit', () => {
  it('admits a few registrations per client address, then answers 429 with Retry-After', async () => {
    const limited = await startDoorHost(store, { registrationLimit: { limit: 3, windowMs: 60_000 } });
    try {
      const once = () =>
        fetch(`${limited.url}/api/service/mcp/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['https://a.example/cb'] }),
        });
      for (let i = 0; i < 3; i++) expect((await once()).status).toBe(201);
      const refused = await once();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('access-control-allow-origin')).toBe('*');
      // Browser clients may read how long to wait.
      expect(refused.headers.get('access-control-expose-headers')).toContain('Retry-After');
      expect((await refused.json()).error).toBe('rate_limit_exceeded');
      // The next window admits registrations again.
      limited.clock.advance(60_000);
      expect((await once()).status).toBe(201);
    } finally {
      await limited.close();
    }
  });

  it('does not count a request whose adapter passed no connection info', async () => {
    const limited = await startDoorHost(store, { registrationLimit: { limit: 1, windowMs: 60_000 } });
    try {
      const once = () =>
        limited.door.handle(
          new Request(`${limited.url}/api/service/mcp/register`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ redirect_uris: ['https://a.example/cb'] }),
          }),
        );
      for (let i = 0; i < 3; i++) expect((await once())?.status).toBe(201);
    } finally {
      await limited.close();
    }
  });
});
