/**
 * The demo host's side of the MCP door: who is signed in (the sign-in stand-in's cookie, else a
 * redirect to its `/login` page that comes back to the door), who a subject is (re-asked on every
 * MCP request), and how a call from an outside agent reaches the host as the user.
 *
 * @see docs/door.md "The door in the demo host"
 */
import type { DoorMcpOptions, DoorOAuthAdapter } from '@service/core/door';
import type { ActAs } from '@service/core/wire';
import type { SignIn } from './sign-in.js';

export const PRODUCT_NAME = 'Demo shop';

export interface DemoDoor {
  mcp: DoorMcpOptions;
  oauth: DoorOAuthAdapter;
  actAs: ActAs;
}

export interface DemoDoorOptions {
  /** The host's public URL (no trailing slash): the sign-in page lives at `{baseUrl}/login`. */
  baseUrl: string;
  /** Enables the service-key exchange at the door's `/token` with this key. */
  serviceKey?: string;
}

export function demoDoor(signIn: SignIn, options: DemoDoorOptions): DemoDoor {
  return {
    // The canonical URL comes from SERVICE_BASE_URL, which the host sets to its own URL.
    mcp: {
      productName: PRODUCT_NAME,
      ...(options.serviceKey ? { serviceAuth: { keys: [options.serviceKey] } } : {}),
    },
    oauth: {
      session: (request, { returnTo }) => {
        const user = signIn.principal(request);
        if (user) return { subject: user.subject };
        const login = `${options.baseUrl}/login?return_to=${encodeURIComponent(returnTo)}`;
        return new Response(null, { status: 302, headers: { location: login, 'cache-control': 'no-store' } });
      },
      principal: (subject) => signIn.principalOf(subject),
    },
    // The demo's tools read the principal directly; a host whose tools call its own API would use
    // these headers. The door never forwards the agent's bearer token.
    actAs: async (principal) => {
      const issued = typeof principal.email === 'string' ? signIn.tokenFor(principal.email) : null;
      if (!issued) throw new Error(`No host session for ${principal.subject}`);
      return { headers: { authorization: `Bearer ${issued.token}` } };
    },
  };
}
