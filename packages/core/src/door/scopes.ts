/**
 * The scopes the MCP endpoint (the protected resource) checks: what a tool call needs, and what
 * the resource advertises and challenges with. The authorization server's own list (`SCOPES`)
 * may hold more; only the scopes a request can need are the resource's.
 *
 * @see docs/door.md "The MCP endpoint"; MCP 2026-07-28 "Authorization" §Scope Challenge Handling
 */
import type { RegisteredTool } from '../agent/tools.js';
import { SCOPES } from './config.js';

/**
 * Scopes in the protected-resource metadata and every Bearer challenge. `offline_access` asks the
 * authorization server for a refresh token and is no resource requirement, so it is never one.
 */
export const RESOURCE_SCOPES: readonly string[] = SCOPES.filter(
  (scope: string) => scope !== 'offline_access',
);

/**
 * The scope words of a request or a registration, without `offline_access` (OpenID Connect's ask
 * for a refresh token, which Claude and others send): the door always issues refresh tokens, so
 * the word is accepted and dropped, never granted nor refused.
 */
export function withoutOfflineAccess(scope: string): string[] {
  return scope.split(' ').filter((word) => word !== '' && word !== 'offline_access');
}

/** A broader scope implies the narrower ones: `write` covers what `read` allows. */
const IMPLIED_BY: Readonly<Record<string, readonly string[]>> = { read: ['write'] };

/** Every scope a call of `tool` needs: `read` for a tool labelled read, `write` for any other. */
export function scopesNeededFor(tool: Pick<RegisteredTool, 'risk'>): string[] {
  return tool.risk === 'read' ? ['read'] : ['write'];
}

/** Whether a token granted `granted` may do what needs `needed`, counting implied scopes. */
export function coversScopes(granted: readonly string[], needed: readonly string[]): boolean {
  return needed.every(
    (scope) =>
      granted.includes(scope) || (IMPLIED_BY[scope] ?? []).some((broader) => granted.includes(broader)),
  );
}
