/**
 * Bearer authentication of the MCP transport (RFC 6750): opaque door tokens looked up by hash, or
 * `remoteAs` JWTs. Split from the challenge it answers with, so every adapter reuses both.
 *
 * @see RFC 6750 §3, RFC 9728 §5.1; MCP "Authorization" §Protected Resource Metadata Discovery
 */
import { TtlCache } from '../../internal/ttl-cache.js';
import type { DoorContext } from '../context.js';
import { withCors } from '../cors.js';
import { RESOURCE_SCOPES } from '../scopes.js';
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

/** Why a presented token is refused: invalid (401), or valid without every scope the operation needs (403). */
export type BearerRefusal =
  | { code: 'invalid_token'; description: string }
  | { code: 'insufficient_scope'; description: string; scopes: readonly string[] };

/**
 * The 401 that starts discovery: `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728
 * §5.1) with the scopes to ask for, and `error="invalid_token"` once a token was presented. An
 * `insufficient_scope` refusal is a 403 whose `scope` names every scope the operation needs
 * (RFC 6750 §3.1), so a client steps up in one authorization.
 */
export function bearerChallenge(context: Pick<DoorContext, 'config'>, error: BearerRefusal | null): Response {
  const scopes = error?.code === 'insufficient_scope' ? error.scopes : RESOURCE_SCOPES;
  const params = [
    `resource_metadata="${context.config.urls.protectedResourceMetadata}"`,
    `scope="${scopes.join(' ')}"`,
    ...(error
      ? [`error="${error.code}"`, `error_description="${error.description.replace(/["\\]/g, '')}"`]
      : []),
  ];
  const body = error
    ? { error: error.code, error_description: error.description }
    : { error: 'invalid_token', error_description: 'Missing bearer token' };
  return withCors(
    new Response(JSON.stringify(body), {
      status: error?.code === 'insufficient_scope' ? 403 : 401,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        'www-authenticate': `Bearer ${params.join(', ')}`,
      },
    }),
  );
}
