/**
 * Bearer authentication of the MCP transport (RFC 6750): opaque door tokens looked up by hash, or
 * `remoteAs` JWTs. Split from the challenge it answers with, so every adapter reuses both.
 *
 * @see RFC 6750 §3, RFC 9728 §5.1; MCP "Authorization" §Protected Resource Metadata Discovery
 */
import { TtlCache } from '../../internal/ttl-cache.js';
import { SCOPES } from '../config.js';
import type { DoorContext } from '../context.js';
import { withCors } from '../cors.js';
import { hashSecret } from '../secrets.js';

/** Who is calling through the door, and under which grant. */
export interface DoorCaller {
  subject: string;
  clientId: string;
  scopes: string[];
  /** `svc:<hash8>` for service-key tokens, null otherwise. */
  actor: string | null;
  /** `oauth`: a user authorization with a consent record; `service`: the key exchange; `remote`: an external issuer's JWT. */
  via: 'oauth' | 'service' | 'remote';
  expiresAt: Date;
}

export interface BearerAuthenticator {
  authenticate(token: string): Promise<DoorCaller | null>;
  clear(): void;
}

const MAX_CACHE_ENTRIES = 10_000;
const MAX_TOKEN_LENGTH = 8192;

export function createBearerAuthenticator(
  context: Pick<DoorContext, 'grants' | 'config' | 'now'>,
  remote: { verify(token: string): Promise<Omit<DoorCaller, 'actor' | 'via'> | null> } | null,
  cacheTtlMs: number,
): BearerAuthenticator {
  const cache = new TtlCache<string, DoorCaller>({
    ttlMs: cacheTtlMs,
    maxEntries: MAX_CACHE_ENTRIES,
    now: context.now,
  });
  const serviceClient = context.config.serviceAuth?.clientId ?? null;
  return {
    clear: () => cache.clear(),
    async authenticate(token) {
      if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null;
      if (remote) {
        const caller = await remote.verify(token);
        return caller ? { ...caller, actor: null, via: 'remote' } : null;
      }
      const key = hashSecret(token);
      const hit = cache.get(key);
      if (hit) return hit;
      const grant = await context.grants.authenticate(token);
      if (!grant) return null;
      const caller: DoorCaller = {
        subject: grant.subject,
        clientId: grant.clientId,
        scopes: grant.scopes,
        actor: grant.actor,
        via: grant.actor !== null && grant.clientId === serviceClient ? 'service' : 'oauth',
        expiresAt: grant.expiresAt,
      };
      // Never served past the token's own expiry.
      cache.set(key, caller, Math.min(cacheTtlMs, grant.expiresAt.getTime() - context.now()));
      return caller;
    },
  };
}

/** The bearer token of a request, or null for no header, another scheme or an empty token. */
export function bearerOf(request: Request): string | null {
  const header = request.headers.get('authorization');
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * The 401 that starts discovery: `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728
 * §5.1) with the scopes to ask for, and `error="invalid_token"` once a token was presented.
 */
export function bearerChallenge(
  context: Pick<DoorContext, 'config'>,
  error: { code: 'invalid_token'; description: string } | null,
): Response {
  const params = [
    `resource_metadata="${context.config.urls.protectedResourceMetadata}"`,
    `scope="${SCOPES.join(' ')}"`,
    ...(error
      ? [`error="${error.code}"`, `error_description="${error.description.replace(/["\\]/g, '')}"`]
      : []),
  ];
  const body = error
    ? { error: error.code, error_description: error.description }
    : { error: 'invalid_token', error_description: 'Missing bearer token' };
  return withCors(
    new Response(JSON.stringify(body), {
      status: 401,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        'www-authenticate': `Bearer ${params.join(', ')}`,
      },
    }),
  );
}
