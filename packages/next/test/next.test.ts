/**
 * The Next.js handlers forward to the wire and nothing else; the well-known handler answers
 * the door's documents and 404s the rest.
 */
import type { Service } from '@service/core/wire';
import { describe, expect, it } from 'vitest';
import { toNextHandlers, toNextWellKnownHandler } from '../src/index.js';

function fakeService(): Service & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    fetch: async (request) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    },
    wellKnown: async (request) =>
      new URL(request.url).pathname === '/.well-known/mcp-server-card' ? new Response('card') : null,
    close: async () => {},
    context: {} as never,
  };
}

describe('@service/next', () => {
  it('maps every method to the wire, resolving a service factory once', async () => {
    const service = fakeService();
    let made = 0;
    const handlers = toNextHandlers(async () => {
      made++;
      return service;
    });
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      const response = await handlers[method](new Request('http://h/api/service/threads', { method }));
      expect(response.status).toBe(200);
    }
    expect(service.seen).toEqual([
      'GET /api/service/threads',
      'POST /api/service/threads',
      'PUT /api/service/threads',
      'PATCH /api/service/threads',
      'DELETE /api/service/threads',
    ]);
    expect(made).toBe(1);
  });

  it('answers the door’s well-known documents and 404 for other paths', async () => {
    const { GET } = toNextWellKnownHandler(fakeService());
    expect(await (await GET(new Request('http://h/.well-known/mcp-server-card'))).text()).toBe('card');
    expect((await GET(new Request('http://h/.well-known/security.txt'))).status).toBe(404);
  });
});
