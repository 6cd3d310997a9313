/**
 * The client metadata the door registers (RFC 7591 §2): public clients only, unknown members
 * dropped, every refusal worded for the client. A problem with `redirect_uris` is an
 * `invalid_redirect_uri`, any other an `invalid_client_metadata` (RFC 7591 §3.2.2).
 *
 * Problems are reported one at a time, in a fixed order: the redirect URIs, then the shape of the
 * two lists, then what the lists ask for, then each other member in turn.
 *
 * @see RFC 7591 §2, §3.2
 */
import { z } from 'zod';
import { SCOPES } from '../config.js';
import { withoutOfflineAccess } from '../scopes.js';
import { redirectUriProblem } from './redirect-uri.js';

const MAX_REDIRECT_URIS = 10;
const MAX_TEXT = 200;
const MAX_URI = 2000;
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);
const REDIRECT_URIS_REQUIRED = 'redirect_uris is required: a non-empty array of URLs';
export const NOT_A_JSON_OBJECT = 'Request body must be a JSON object';

/** What the door stores and answers, members in this order. */
export interface ClientMetadata {
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  client_name?: string;
  scope?: string;
  client_uri?: string;
  logo_uri?: string;
  software_id?: string;
  software_version?: string;
}

/** RFC 7591 §2: `redirect_uris` is required; each URI must pass the door's redirect URI rules. */
const redirectUris = z
  .array(z.unknown(), { error: REDIRECT_URIS_REQUIRED })
  .min(1, REDIRECT_URIS_REQUIRED)
  .max(MAX_REDIRECT_URIS, `At most ${MAX_REDIRECT_URIS} redirect_uris may be registered`)
  .superRefine((uris, ctx) => {
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem) return ctx.addIssue({ code: 'custom', message: problem });
    }
  })
  .transform((uris) => [...new Set(uris as string[])]);

/** A list of names, defaulted when absent, repeats dropped. */
const nameList = (field: string, fallback: readonly string[]) => {
  const message = `${field} must be a non-empty array of strings`;
  return z
    .array(z.string({ error: message }), { error: message })
    .min(1, message)
    .transform((names) => [...new Set(names)])
    .default(() => [...fallback]);
};

/** Optional text, trimmed; null and blank count as absent. */
const text = (field: string, max = MAX_TEXT) =>
  z
    .string({ error: `${field} must be a string` })
    .trim()
    .max(max, `${field} is too long (at most ${max})`)
    .nullish()
    .transform((value) => value || undefined);

const httpsUri = (field: string) =>
  text(field, MAX_URI).refine(
    (value) => value === undefined || (/^https:\/\//i.test(value) && URL.canParse(value)),
    `${field} must be an https URL`,
  );

const knownScopes = (value: string | undefined, ctx: z.RefinementCtx) => {
  const unknown = (value ?? '').split(' ').filter((s) => s && !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0)
    ctx.addIssue({ code: 'custom', message: `scope: unknown scope ${unknown.join(', ')}` });
};

/**
 * First the redirect URIs and the shape of the two lists. Loose: the other members go on to
 * `accepted`, which is parsed only once these hold and drops the members it does not know.
 */
const shape = z.looseObject(
  {
    redirect_uris: redirectUris,
    grant_types: nameList('grant_types', ['authorization_code', 'refresh_token']),
    response_types: nameList('response_types', ['code']),
  },
  { error: NOT_A_JSON_OBJECT },
);

/** What the lists ask for, then every other member, in the order they are reported. */
const accepted = z.object({
  redirect_uris: z.array(z.string()),
  // Grants the door does not offer (a device-code grant, say) are dropped, as RFC 7591 §3.2.1
  // lets the server do: the answer names what was registered.
  grant_types: z
    .array(z.string())
    .transform((grants) => grants.filter((grant) => GRANT_TYPES.has(grant)))
    .refine((grants) => grants.includes('authorization_code'), 'grant_types must include authorization_code'),
  response_types: z
    .array(z.string())
    .refine((types) => types.every((type) => type === 'code'), 'response_types may only be ["code"]'),
  // Secret-based methods are answered as `none`: the door issues no client secrets (RFC 7591 §3.2.1).
  token_endpoint_auth_method: z
    .enum(['none', 'client_secret_basic', 'client_secret_post'], {
      error: 'token_endpoint_auth_method must be none (public clients)',
    })
    .optional()
    .transform(() => 'none' as const),
  client_name: text('client_name'),
  scope: text('scope')
    .transform((value) =>
      value === undefined ? undefined : withoutOfflineAccess(value).join(' ') || undefined,
    )
    .superRefine(knownScopes),
  client_uri: httpsUri('client_uri'),
  logo_uri: httpsUri('logo_uri'),
  software_id: text('software_id'),
  software_version: text('software_version'),
});

/** Members that come out empty (null, blank) are undefined, so they are neither stored nor answered. */
export const clientMetadataSchema: z.ZodType<ClientMetadata> = shape.pipe(accepted);

/**
 * The metadata of a client ID metadata document (MCP 2025-11-25 "Client ID Metadata Documents"):
 * what a registration would carry, plus `client_id` equal to the document's own URL (string for
 * string), a `client_name`, and no shared secret, since the door cannot have handed one out.
 */
export function acceptClientIdDocument(
  url: string,
  body: unknown,
): { ok: true; metadata: ClientMetadata } | { ok: false; problem: string } {
  const refuse = (problem: string) => ({ ok: false as const, problem });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return refuse('the document is not a JSON object');
  }
  const document = body as Record<string, unknown>;
  if (document.client_id !== url) return refuse('its client_id is not the URL it was fetched from');
  if ('client_secret' in document) return refuse('it must not carry a client_secret');
  const method = document.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    return refuse('its token_endpoint_auth_method must be none (the door serves public clients)');
  }
  if (typeof document.client_name !== 'string' || document.client_name.trim() === '') {
    return refuse('it must name the client (client_name)');
  }
  const parsed = clientMetadataSchema.safeParse(document);
  return parsed.success ? { ok: true, metadata: parsed.data } : refuse(parsed.error.issues[0]!.message);
}
