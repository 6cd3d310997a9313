import { clientIp, socketAddress } from '../http/client-ip.js';
import type { DoorContext } from './context.js';

/**
 * The client address a per-address limit counts (the socket's, or with trusted proxies the
 * `X-Forwarded-For` entry that many hops from the end); null without the adapter's connection
 * info, since nothing else about a request says who sent it.
 */
export function countableAddress(context: DoorContext, request: Request, connection: unknown): string | null {
  if (socketAddress(connection) === undefined) return null;
  return clientIp(request, connection, { trustedProxies: context.config.trustedProxies });
}
