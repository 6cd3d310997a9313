import { type Context, Hono } from 'hono';
import { whenClientGone } from '../http/client-gone.js';
import { clientIp } from '../http/client-ip.js';
import type { ProxyEnv } from './env.js';
import { answerBody, answerStream } from './forwarding.js';
import type { ProxyCore } from './proxy-core.js';
import { subPathOf } from './request.js';

/** The mount point: `{provider_proxy_url}` = `{base_url}/proxy/{provider}`. */
export const PROXY_PREFIX = '/proxy';

/**
 * The provider proxy as Hono routes, for calls that come in as a `Request` (`platform.fetch`):
 * the metered path itself is the core's, shared with the Node listener (`proxy/node-listener.ts`).
 *
 * @see docs/proxy.md
 */
export function createProviderProxy(core: ProxyCore): Hono<ProxyEnv> {
  const app = new Hono<ProxyEnv>();

  app.all(`${PROXY_PREFIX}/:provider/*`, handle);
  app.all(`${PROXY_PREFIX}/:provider`, handle);

  async function handle(c: Context<ProxyEnv>): Promise<Response> {
    c.set('errorShape', 'canonical');
    const request = c.req.raw;
    const url = new URL(request.url);
    const answer = await core.handle({
      method: request.method.toUpperCase(),
      provider: c.req.param('provider') ?? '',
      subPath: subPathOf(url.pathname),
      search: url.search,
      header: (name) => request.headers.get(name),
      headers: () => request.headers,
      // Node's web streams are async iterable; the DOM types do not say so.
      body: () => request.body as unknown as AsyncIterable<Uint8Array> | null,
      clientAddress: (trustedProxies) => clientIp(request, c.env, { trustedProxies }),
      signal: request.signal,
      requestId: c.get('requestId') ?? null,
    });
    if (answer instanceof Response) return answer;
    if (!answer.body) return new Response(null, { status: answer.status, headers: answer.headers });
    const body = answerBody(answer.body, answer.tap);
    // A caller gone before its answer is written never reads nor cancels the body: the call ends
    // as cut (billed for what it used, or its hold), so it is not left counted in flight.
    whenClientGone(c.env, request.signal, () => body.abandon(new Error('The caller went away')));
    return new Response(answerStream(body), { status: answer.status, headers: answer.headers });
  }

  return app;
}
