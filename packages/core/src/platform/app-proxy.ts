import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Context, Hono } from 'hono';
import { parse as parseCookie } from 'hono/utils/cookie';
import { decodeOrNull } from '../http/input-guard.js';
import { SESSION_COOKIE } from '../identity/sessions.js';
import type { MembershipRole } from '../store/database.js';
import type { PlatformContext, PlatformEnv } from './context.js';
import { PlatformError } from './errors.js';
import { requireSession, type SessionCaller } from './internal/session.js';
import { APP_SLUG } from './routes/deploy.js';
import { messagePage, pageHeaders, signInAction } from './routes/page-html.js';

/** Headers that describe one hop, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  // Answered by the platform's own server (its `100 Continue`); Node's fetch refuses to send it.
  'expect',
]);

/** The identity a deployed app receives on every proxied request. */
interface Identity {
  userId: string;
  email: string;
  name: string;
  tenantId: string;
  role: MembershipRole;
}

export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/**
 * The app proxy: `{baseUrl}/apps/{slug}/...` reaches the deployment of the app `slug` of the
 * signed-in user's current workspace (slugs are unique within a workspace; another workspace's app
 * of the same slug is never reached). It forwards the method, path, query and body, streaming both
 * ways (an event stream passes as it is written); strips every inbound `X-Service-*` header and
 * the platform's session cookie, and injects the five identity headers. Signed out: to sign-in and
 * back. Suspended workspace: 403 page. Deployment not running: 503 page; unreachable: 502 page.
 *
 * @see docs/api/apps.md "The app proxy"
 */
export function appProxyRoutes(ctx: PlatformContext, options: { devSignIn: boolean }): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const basePath = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  const page = (
    c: Context,
    status: 401 | 403 | 404 | 502 | 503,
    title: string,
    message: string,
    action?: { href: string; text: string },
    retryAfter?: number,
  ) =>
    c.body(
      messagePage(title, message, action),
      status,
      retryAfter ? { ...pageHeaders, 'retry-after': String(retryAfter) } : pageHeaders,
    );

  const proxy = async (c: Context<PlatformEnv>) => {
    const slug = c.req.param('slug') ?? '';
    const url = new URL(c.req.url);
    const returnTo = `${url.pathname}${url.search}`;
    if (!APP_SLUG.test(slug)) return page(c, 404, 'No such app', 'There is no app at this address.');
    let user: SessionCaller;
    try {
      user = await requireSession(ctx, c);
    } catch (error) {
      if (!(error instanceof PlatformError) || error.status !== 401) throw error;
      const signIn = signInAction({ basePath, baseUrl: ctx.baseUrl, devSignIn: options.devSignIn }, returnTo);
      if (options.devSignIn) return c.redirect(signIn.href, 302);
      return page(c, 401, 'Sign in', 'Sign in to open this app.', signIn);
    }
    const target = await targetOf(ctx, user, slug);
    if ('refusal' in target) {
      const { status, title, message, retryAfter } = target.refusal;
      return page(c, status, title, message, undefined, retryAfter);
    }
    // Cut by segments, not characters: the prefix may have come percent-encoded, longer than decoded.
    const prefixSegments = `${basePath}/apps/${slug}`.split('/').length;
    const rest = `/${url.pathname.split('/').slice(prefixSegments).join('/')}`;
    const headers = forwardedHeaders(c.req.raw.headers, target.identity, {
      prefix: `${basePath}/apps/${slug}`,
      host: url.host,
      proto: url.protocol.replace(':', ''),
    });
    const hasBody = !['GET', 'HEAD'].includes(c.req.method);
    let upstream: Response;
    try {
      upstream = await fetch(`${target.endpoint}${rest}${url.search}`, {
        method: c.req.method,
        headers,
        redirect: 'manual',
        signal: c.req.raw.signal,
        ...(hasBody ? { body: c.req.raw.body, duplex: 'half' } : {}),
      } as RequestInit);
    } catch {
      return page(c, 502, 'App unreachable', 'The app did not answer. Try again in a moment.');
    }
    const answer = new Headers();
    upstream.headers.forEach((value, name) => {
      // Node's fetch hands the body over decoded: its encoding no longer applies.
      if (HOP_BY_HOP.has(name) || name === 'content-encoding') return;
      // An app must not set (or clear) the platform's own session cookie.
      if (name === 'set-cookie' && setCookieName(value) === SESSION_COOKIE) return;
      answer.append(name, value);
    });
    return new Response(endingWithClient(upstream.body, c.req.raw.signal), {
      status: upstream.status,
      statusText: upstream.statusText,
      headers: answer,
    });
  };

  app.all('/apps/:slug', proxy);
  app.all('/apps/:slug/*', proxy);
  return app;
}

/**
 * The app's answer as it streams, ended quietly once the client has gone: its leaving aborts the
 * fetch, and the body's error would reach the node server, which prints it to the console (for
 * every closed event stream). An app failing midway still errors it, so the answer is cut short.
 */
function endingWithClient(
  body: ReadableStream<Uint8Array> | null,
  gone: AbortSignal,
): ReadableStream<Uint8Array> | null {
  if (!body) return null;
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) controller.close();
        else controller.enqueue(chunk.value);
      } catch (error) {
        if (gone.aborted) controller.close();
        else controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

type Target =
  | { endpoint: string; identity: Identity }
  | { refusal: { status: 403 | 404 | 502 | 503; title: string; message: string; retryAfter?: number } };

/** Where the request goes and as whom, or why it goes nowhere. */
async function targetOf(ctx: PlatformContext, user: SessionCaller, slug: string): Promise<Target> {
  if (await ctx.tenantStatuses.isSuspended(user.tenantId)) {
    return {
      refusal: {
        status: 403,
        title: 'Workspace suspended',
        message: 'This workspace is suspended, so its apps are closed.',
      },
    };
  }
  const found = await ctx.deployments.appBySlug(user.tenantId, slug);
  if (!found) {
    return {
      refusal: { status: 404, title: 'No such app', message: 'This workspace has no app at this address.' },
    };
  }
  const appId = found.id;
  // An app made without a deploy never runs here: nothing will answer however long one waits.
  if (!found.deployed) {
    return {
      refusal: {
        status: 404,
        title: 'App not deployed',
        message: 'This app was never deployed on the platform, so nothing answers at this address.',
      },
    };
  }
  const endpoint = ctx.deployments.endpoint(appId);
  if (!endpoint) {
    const { state } = ctx.deployments.status(appId);
    const message =
      state === 'crash_loop'
        ? 'The app keeps stopping and is being restarted. Its logs say why.'
        : state === 'starting'
          ? 'The app is starting. Try again in a moment.'
          : 'The app is not running. Deploy it again to start it.';
    // Only a starting deployment is worth asking again soon; a stopped one waits for a redeploy.
    return {
      refusal: {
        status: state === 'crash_loop' ? 502 : 503,
        title: 'App not running',
        message,
        ...(state === 'starting' ? { retryAfter: 5 } : {}),
      },
    };
  }
  const profile = await ctx.workspaces.profile(user.userId);
  return {
    endpoint,
    identity: {
      userId: user.subject,
      email: user.email ?? '',
      name: profile.name ?? '',
      tenantId: user.tenantId,
      role: user.role,
    },
  };
}

/**
 * The request headers an app receives: the client's, without hop-by-hop ones, any `X-Service-*`,
 * `X-Forwarded-*` or `Forwarded` the client sent, and the platform's session cookie; with the identity headers
 * and where the request came in.
 */
function forwardedHeaders(
  inbound: Headers,
  identity: Identity,
  via: { prefix: string; host: string; proto: string },
): Headers {
  const headers = new Headers();
  inbound.forEach((value, name) => {
    if (
      HOP_BY_HOP.has(name) ||
      name.startsWith('x-service-') ||
      name.startsWith('x-forwarded-') ||
      // The standard form of the same claims (RFC 7239): a client must not make them either.
      name === 'forwarded'
    )
      return;
    if (name === 'cookie') {
      const kept = withoutSessionCookie(value);
      if (kept) headers.set('cookie', kept);
      return;
    }
    headers.append(name, value);
  });
  // Node's fetch would decompress and keep the encoding header: ask for the body as it is.
  headers.set('accept-encoding', 'identity');
  for (const [name, value] of Object.entries(identityHeaders(identity))) headers.set(name, value);
  headers.set('x-forwarded-host', via.host);
  headers.set('x-forwarded-proto', via.proto);
  headers.set('x-forwarded-prefix', via.prefix);
  return headers;
}

function identityHeaders(identity: Identity): Record<string, string> {
  return {
    'x-service-user-id': headerSafe(identity.userId),
    // The identity provider's claims may go beyond Latin-1 too (an internationalized address).
    'x-service-user-email': headerSafe(identity.email),
    'x-service-user-name': headerSafe(identity.name),
    'x-service-tenant-id': identity.tenantId,
    'x-service-role': identity.role,
  };
}

/** A header carries Latin-1 only: a value beyond printable ASCII is sent percent-encoded. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

/**
 * The name a browser gives the cookie of a `Set-Cookie`: before the first `=`, without the spaces
 * and tabs around it (RFC 6265 5.2), so `service_session =x` sets the session cookie too.
 */
function setCookieName(value: string): string {
  const pair = value.split(';', 1)[0]!;
  const equals = pair.indexOf('=');
  return equals === -1 ? '' : pair.slice(0, equals).replace(/^[ \t]+|[ \t]+$/g, '');
}

function withoutSessionCookie(cookie: string): string {
  return cookie
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part && !part.startsWith(`${SESSION_COOKIE}=`))
    .join('; ');
}

/**
 * WebSocket (any `Upgrade`) to a deployed app, at the node level (a fetch handler cannot take over
 * a socket). The same checks as the proxy, plus the `Origin` must be the platform's own (a page
 * elsewhere must not open a socket with the user's cookie); refusals answer a bare status line.
 */
export function createUpgradeHandler(ctx: PlatformContext): UpgradeHandler {
  const base = new URL(ctx.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const refuse = (socket: Duplex, status: string) => {
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  };
  return (request, socket, head) => {
    // Node drops its own error listener from an upgraded socket: a client that resets it while
    // it is checked would otherwise raise an uncaught error (and end the process).
    socket.on('error', () => socket.destroy());
    void (async () => {
      // A request target that is no URL (Node lets `http://[x` through) is the client's fault.
      if (!URL.canParse(request.url ?? '/', base.origin)) return refuse(socket, '400 Bad Request');
      const url = new URL(request.url ?? '/', base.origin);
      const match = url.pathname.slice(basePath.length).match(/^\/apps\/([^/]+)(\/.*)?$/);
      // The slug is read decoded, as the HTTP routes read it (`/apps/%65cho` is `echo`).
      const slug = match ? decodeOrNull(match[1]!) : null;
      if (!url.pathname.startsWith(`${basePath}/`) || !match || slug === null || !APP_SLUG.test(slug)) {
        return refuse(socket, '404 Not Found');
      }
      if (request.headers.origin !== base.origin) return refuse(socket, '403 Forbidden');
      // Read as the HTTP routes read it (a value that is not valid percent-encoding stays as sent).
      const cookie = parseCookie(request.headers.cookie ?? '', SESSION_COOKIE)[SESSION_COOKIE];
      const session = await ctx.sessions.resolve(cookie);
      const role = session?.tenantId ? await ctx.accounts.roleIn(session.tenantId, session.userId) : null;
      if (!session?.tenantId || !role) return refuse(socket, '401 Unauthorized');
      const user: SessionCaller = { ...session, tenantId: session.tenantId, role };
      const target = await targetOf(ctx, user, slug);
      if ('refusal' in target) return refuse(socket, `${target.refusal.status} ${target.refusal.title}`);
      const headers = forwardedHeaders(toHeaders(request), target.identity, {
        prefix: `${basePath}/apps/${slug}`,
        host: request.headers.host ?? base.host,
        proto: base.protocol.replace(':', ''),
      });
      const endpoint = new URL(target.endpoint);
      const lines = [`${request.method} ${match[2] ?? '/'}${url.search} HTTP/1.1`, `host: ${endpoint.host}`];
      headers.forEach((value, name) => {
        lines.push(`${name}: ${value}`);
      });
      lines.push('connection: Upgrade', `upgrade: ${request.headers.upgrade ?? 'websocket'}`);
      const upstream = connect({ host: endpoint.hostname, port: Number(endpoint.port) });
      upstream.once('connect', () => {
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.once('error', () => refuse(socket, '502 Bad Gateway'));
      socket.once('error', () => upstream.destroy());
      socket.once('close', () => upstream.destroy());
      // A WebSocket has no half-open state: once either side ends, the other is ended and both
      // closed. The platform's server keeps a socket half-open, so a client that just goes away
      // (its FIN, no close frame) would hold both of the platform's sockets open for as long as
      // the app keeps its side.
      for (const [from, to] of [
        [socket, upstream],
        [upstream, socket],
      ] as const) {
        from.once('end', () =>
          to.end(() => {
            socket.destroy();
            upstream.destroy();
          }),
        );
      }
    })().catch(() => refuse(socket, '500 Internal Server Error'));
  };
}

function toHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}
