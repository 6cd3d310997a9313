import { describe, expect, it } from 'vitest';
import { WireError } from './errors.js';
import { checkEncoding, checkJsonGate, gateException, wirePath } from './pipeline.js';

describe('wirePath', () => {
  it('strips the base path and refuses anything outside it', () => {
    expect(wirePath('/api/service')).toBe('/');
    expect(wirePath('/api/service/threads')).toBe('/threads');
    expect(wirePath('/api/servicex')).toBeNull();
    expect(wirePath('/api')).toBeNull();
  });
});

describe('checkEncoding', () => {
  it('refuses a path or query that does not decode', () => {
    expect(() => checkEncoding(new URL('http://h/api/service/a%20b?x=%C3%A9'))).not.toThrow();
    expect(() => checkEncoding(new URL('http://h/api/service/%E0%A4%A'))).toThrow(WireError);
    expect(() => checkEncoding(new URL('http://h/api/service/a?x=%zz'))).toThrow(/percent-encoding/);
  });
});

describe('the JSON gate', () => {
  const headers = (h: Record<string, string>) => new Headers(h);

  it('names exactly four exceptions', () => {
    expect(gateException('POST', '/files', headers({ 'x-service-upload': 'raw' }))).toBe('file-upload');
    expect(gateException('POST', '/files', headers({ 'x-service-upload': 'Multipart' }))).toBe('file-upload');
    expect(gateException('POST', '/files', headers({ 'x-service-upload': 'form' }))).toBeNull();
    expect(gateException('POST', '/files', headers({}))).toBeNull();
    expect(
      gateException('POST', '/apps/import', headers({ 'content-type': 'application/vnd.service.app+json' })),
    ).toBe('app-import');
    expect(gateException('POST', '/tick', headers({}))).toBe('tick');
    expect(gateException('POST', '/webhooks/github', headers({}))).toBe('webhook');
    expect(gateException('POST', '/webhooks/a/b', headers({}))).toBeNull();
    expect(gateException('DELETE', '/tick', headers({}))).toBeNull();
  });

  it('lets reads through and holds every state-changing method to JSON', () => {
    expect(() => checkJsonGate('GET', '/threads', headers({}))).not.toThrow();
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(() => checkJsonGate(method, '/threads/x', headers({}))).toThrow(
        /Content-Type: application\/json/,
      );
      expect(() =>
        checkJsonGate(method, '/threads/x', headers({ 'content-type': 'application/json; charset=utf-8' })),
      ).not.toThrow();
    }
  });
});
