import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { allowedMethods, methodNotAllowed } from './allowed-methods.js';

describe('allowedMethods', () => {
  const app = new Hono();
  app.use(async (_c, next) => next());
  app.use('/things/*', async (_c, next) => next());
  app.get('/things', (c) => c.text('list'));
  app.post('/things', (c) => c.text('made'));
  app.delete('/things/:id', (c) => c.text('gone'));
  app.patch('/things/:id', (c) => c.text('changed'));
  app.options('/things/:id', (c) => c.body(null, 204));
  app.on('PURGE', '/cache/:key', (c) => c.text('purged'));
  const sub = new Hono();
  sub.put('/settings', (c) => c.text('set'));
  app.route('/nested', sub);
  const methodsOf = allowedMethods(app);

  it('lists the methods of the routes a path matches, in a fixed order, a GET route taking HEAD', () => {
    expect(methodsOf('/things')).toEqual(['GET', 'HEAD', 'POST']);
    expect(methodsOf('/things/42')).toEqual(['PATCH', 'DELETE', 'OPTIONS']);
    expect(methodsOf('/cache/k')).toEqual(['PURGE']);
    expect(methodsOf('/nested/settings')).toEqual(['PUT']);
  });

  it('leaves middleware out: a path only middleware matches takes nothing', () => {
    expect(methodsOf('/things/42/more')).toEqual([]);
    expect(methodsOf('/unknown')).toEqual([]);
    expect(methodsOf('/things/')).toEqual([]);
  });
});

describe('methodNotAllowed', () => {
  it('answers 405 in the canonical shape with Allow', async () => {
    const response = methodNotAllowed('PUT', ['GET', 'HEAD']);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(response.headers.get('service-error-code')).toBe('method_not_allowed');
    expect(await response.json()).toEqual({
      error: {
        code: 'method_not_allowed',
        message: 'This address does not take PUT requests; it takes GET, HEAD',
      },
    });
  });
});
