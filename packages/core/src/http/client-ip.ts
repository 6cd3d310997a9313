import { isIP } from 'node:net';

/**
 * Who is calling, for per-IP limits. The socket address is the truth; `X-Forwarded-For` is
 * consulted only when the operator says how many proxies in front of us append to it.
 */
export interface ClientIpOptions {
  /**
   * Number of trusted reverse proxies in front of the service (`SERVICE_TRUSTED_PROXIES`).
   * 0 (the default) ignores `X-Forwarded-For` entirely.
   */
  trustedProxies?: number;
}

/** The connection facts an adapter hands to a fetch handler as its second argument. */
export interface ConnectionInfo {
  /** The peer address of the TCP connection. */
  remoteAddress?: string;
}

/** Reads the socket address that `@hono/node-server` or our own adapters put in the env. */
export function socketAddress(env: unknown): string | undefined {
  const value = env as
    | { remoteAddress?: string; incoming?: { socket?: { remoteAddress?: string } } }
    | undefined;
  return value?.remoteAddress ?? value?.incoming?.socket?.remoteAddress;
}

export function clientIp(request: Request, env: unknown, options: ClientIpOptions = {}): string {
  return clientIpOf(socketAddress(env), request.headers.get('x-forwarded-for'), options);
}

/** `clientIp` from its two facts: the socket's peer address and the `X-Forwarded-For` value. */
export function clientIpOf(
  socket: string | undefined,
  forwardedFor: string | null,
  options: ClientIpOptions = {},
): string {
  const peer = socket ?? 'unknown';
  const hops = options.trustedProxies ?? 0;
  if (hops <= 0) return normalize(peer);
  const forwarded = (forwardedFor ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  // Each trusted proxy appends the address it saw; the client is the entry `hops` from the end.
  const candidate = forwarded[forwarded.length - hops];
  // A header a client can write is only an address when it reads as one: anything else (say, a
  // kilobyte of junk meant to bloat a rate-limit key) counts as the socket's.
  return normalize(candidate !== undefined && isIP(candidate) !== 0 ? candidate : peer);
}

function normalize(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
