import { describe, expect, it } from 'vitest';
import { createDoor, type DoorOptions } from './index.js';
import { doorUrlsFor } from './urls.js';

const store = { db: {} as DoorOptions['store']['db'] };
const oauth = { session: () => ({ subject: 's' }), principal: () => null };
const compose =
  (mcp: DoorOptions['mcp'], env: Record<string, string> = {}, extra: Partial<DoorOptions> = {}) =>
  () =>
    createDoor({ mcp, oauth, store, env, ...extra });

describe('door composition', () => {
  it('refuses to start without a canonical URL (doctor E-MCP-009)', () => {
    expect(compose(true)).toThrow(expect.objectContaining({ code: 'E-MCP-009' }));
    expect(compose(true, { SERVICE_BASE_URL: '  ' })).toThrow(/SERVICE_BASE_URL or mcp.baseUrl/);
    expect(compose(true, { SERVICE_BASE_URL: 'https://app.example' })).not.toThrow();
  });

  it('refuses an oauth adapter without principal, or with neither session nor authorize', () => {
    const base = { mcp: { baseUrl: 'https://a.example' } as const, store, env: {} };
    expect(() => createDoor({ ...base, oauth: undefined as never })).toThrow(/oauth/);
    expect(() => createDoor({ ...base, oauth: { principal: () => null } })).toThrow(/session/);
  });

  it('refuses an empty service-key list, a blank key and a short key', () => {
    const baseUrl = 'https://a.example';
    expect(compose({ baseUrl, serviceAuth: { keys: [] } })).toThrow(
      'mcp.serviceAuth.keys must list at least one key',
    );
    expect(compose({ baseUrl, serviceAuth: { keys: ['k'.repeat(40), '  '] } })).toThrow(
      'mcp.serviceAuth.keys[1] is blank',
    );
    expect(compose({ baseUrl, serviceAuth: { keys: [{ key: '' }] } })).toThrow(
      'mcp.serviceAuth.keys[0] is blank',
    );
    expect(compose({ baseUrl, serviceAuth: { keys: ['short'] } })).toThrow(/shorter than 32/);
  });

  it('refuses allowed origins that are not bare http(s) origins', () => {
    const baseUrl = 'https://a.example';
    for (const origin of [
      'https://app.example/path',
      'app.example',
      'ftp://app.example',
      'https://u:p@app.example',
      'https://app.example?x',
    ]) {
      expect(compose({ baseUrl, allowedOrigins: [origin] }), origin).toThrow(/mcp.allowedOrigins/);
    }
    expect(compose({ baseUrl, allowedOrigins: 'https://app.example' as never })).toThrow(/list of origins/);
    expect(
      compose({ baseUrl, allowedOrigins: ['https://App.example:443/', 'http://localhost:6274'] }),
    ).not.toThrow();
  });

  it('refuses a refresh grace window or absolute refresh lifetime out of range', () => {
    const baseUrl = 'https://a.example';
    for (const refreshGraceMs of [-1, 1.5, 300_001, Number.NaN]) {
      expect(compose({ baseUrl, refreshGraceMs })).toThrow(/mcp.refreshGraceMs must be a whole number/);
    }
    for (const refreshMaxAgeMs of [0, 3_599_999, 366 * 24 * 60 * 60 * 1000]) {
      expect(compose({ baseUrl, refreshMaxAgeMs })).toThrow(/mcp.refreshMaxAgeMs must be a whole number/);
    }
    expect(compose({ baseUrl, refreshGraceMs: 0, refreshMaxAgeMs: 60 * 60 * 1000 })).not.toThrow();
  });

  it('refuses remoteAs with a blank issuer or audience', () => {
    const baseUrl = 'https://a.example';
    expect(compose({ baseUrl, remoteAs: { issuer: ' ', audience: 'a' } })).toThrow(
      'mcp.remoteAs.issuer must not be blank',
    );
    expect(compose({ baseUrl, remoteAs: { issuer: 'https://as.example', audience: '' } })).toThrow(
      'mcp.remoteAs.audience must not be blank',
    );
  });

  it('refuses federation without a secret of at least 32 characters', () => {
    const baseUrl = 'https://a.example';
    expect(compose({ baseUrl, federation: true })).toThrow(/SERVICE_MCP_FEDERATION_SECRET/);
    expect(compose({ baseUrl, federation: true }, { SERVICE_MCP_FEDERATION_SECRET: 'short' })).toThrow(/32/);
    expect(
      compose({ baseUrl, federation: true }, { SERVICE_MCP_FEDERATION_SECRET: 'x'.repeat(32) }),
    ).not.toThrow();
  });

  it('refuses a broker URL that is not https, except on loopback', () => {
    const env = { SERVICE_BASE_URL: 'https://a.example', SERVICE_MCP_FEDERATION_SECRET: 'x'.repeat(32) };
    expect(compose(true, { ...env, SERVICE_MCP_BROKER_URL: 'http://broker.example' })).toThrow(/https/);
    expect(compose(true, { ...env, SERVICE_MCP_BROKER_URL: 'http://127.0.0.1:9000' })).not.toThrow();
  });

  it('refuses theme colours that could break out of the style sheet', () => {
    expect(compose({ baseUrl: 'https://a.example', theme: { accent: 'red;}</style><script>' } })).toThrow(
      /CSS colour/,
    );
  });
});

describe('canonical URLs', () => {
  it('lowercases scheme and host, drops default ports and trailing slashes', () => {
    expect(doorUrlsFor('HTTPS://Example.COM:443/').resource).toBe('https://example.com/api/service/mcp');
    expect(doorUrlsFor('http://localhost:8787//').resource).toBe('http://localhost:8787/api/service/mcp');
    expect(doorUrlsFor('https://example.com/prefix/').wellKnownPaths.protectedResource).toBe(
      '/.well-known/oauth-protected-resource/prefix/api/service/mcp',
    );
  });

  it('refuses userinfo, queries, fragments and other schemes', () => {
    expect(() => doorUrlsFor('https://user:pw@example.com')).toThrow(/userinfo/);
    expect(() => doorUrlsFor('https://example.com/?a=1')).toThrow(/query/);
    expect(() => doorUrlsFor('https://example.com/#x')).toThrow(/fragment/);
    expect(() => doorUrlsFor('ftp://example.com')).toThrow(/http or https/);
    expect(() => doorUrlsFor('not a url')).toThrow(/not a URL/);
  });
});

describe('overrides', () => {
  it('accepts only agent and mcp under surfaces, and string titles', () => {
    const baseUrl = 'https://a.example';
    expect(
      compose({ baseUrl }, {}, { overrides: { surfaces: { mcp: ['a'], agent: [] }, other: 1 } }),
    ).not.toThrow();
    expect(compose({ baseUrl }, {}, { overrides: { surfaces: { web: ['a'] } } })).toThrow(
      'surfaces accepts only agent and mcp',
    );
    expect(compose({ baseUrl }, {}, { overrides: { surfaces: { mcp: 'a' } } })).toThrow(/surfaces.mcp/);
    expect(compose({ baseUrl }, {}, { overrides: { tools: { a: { title: 42 } } } })).toThrow(/tools.a.title/);
  });
});
