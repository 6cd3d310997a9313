/**
 * Request helpers shared by the wire's routes: the principal (resolved once, checked), JSON
 * bodies (size-capped, parsed, validated), the chat body (of which only the last message is
 * held) and query parameters.
 */
import { getCookie } from 'hono/cookie';
import { serialize } from 'hono/utils/cookie';
import { z } from 'zod';
import type { Principal } from '../agent/tools.js';
import { readBodyText } from '../http/body.js';
import { isHostUserId, type JsonInput, parseJsonInput } from '../http/input-guard.js';
import { describeIssues } from '../http/issues.js';
import { readJsonKeepingLast } from '../http/json-keep-last.js';
import { positionOf } from '../store/keyset.js';
import { BASE_PATH, type WireContext, type WireCtx } from './context.js';
import { WireError } from './errors.js';
import { orgPrincipal } from './orgs.js';

const RESERVED_NAMESPACE = 'service:';

/**
 * Who the request acts as: the signed-in user (`userOf`), or, with organizations available, the
 * organization workspace they chose (`?org=<id>`, else the one they switched to) as
 * `service:org:<id>` with `actor` naming them.
 */
export async function principalOf(ctx: WireContext, c: WireCtx): Promise<Principal> {
  const cached = c.get('principal');
  if (cached) return cached;
  // Every route that acts as someone: a workspace asked for without organizations is refused
  // before the principal is resolved, never quietly read as the user's own.
  if (!ctx.orgs && new URL(c.req.url).searchParams.has('org')) throw cloudRequired();
  const user = await userOf(ctx, c);
  const principal = ctx.orgs && user.kind !== 'anonymous' ? await workspaceOf(ctx, c, user) : user;
  c.set('principal', principal);
  return principal;
}

async function workspaceOf(ctx: WireContext, c: WireCtx, user: Principal): Promise<Principal> {
  const asked = new URL(c.req.url).searchParams.get('org');
  const orgId = asked ?? (await ctx.orgSelections.current(user.subject));
  if (orgId === null || orgId === '') return user;
  const org = (await ctx.orgs!.list(user)).find((o) => o.id === orgId);
  if (org) return orgPrincipal(org, user);
  // A workspace switched to earlier and left since falls back to the user's own.
  if (asked === null) return user;
  throw new WireError('not_found', 'No such organization (or you are not a member).');
}

/**
 * The signed-in user, from the host's `principal(request)`: null is 403 (or the visitor's
 * anonymous session), a subject in the reserved `service:` namespace or a kind other than `user`
 * is 400, a throw is a logged 500.
 */
export async function userOf(ctx: WireContext, c: WireCtx): Promise<Principal> {
  const cached = c.get('user');
  if (cached) return cached;
  let principal: Principal | null;
  try {
    principal = await ctx.resolvePrincipal(c.req.raw);
  } catch (error) {
    throw new WireError('principal_failed', 'Principal resolution failed.', { cause: error });
  }
  if (principal === null || principal === undefined) {
    if (ctx.anonymous) {
      const anonymous = await anonymousPrincipal(ctx, c);
      c.set('user', anonymous);
      return anonymous;
    }
    throw new WireError('principal_required', 'Sign in required: no user is signed in for this request.');
  }
  if (typeof principal !== 'object' || typeof principal.subject !== 'string' || principal.subject === '') {
    throw new WireError('principal_failed', 'Principal resolution failed.', {
      cause: new Error('principal() must return { subject: string } or null'),
    });
  }
  // The rule the platform holds a host's user ids to: a subject the store could not keep would
  // otherwise fail deep in the first statement that names it.
  if (!isHostUserId(principal.subject)) {
    throw new WireError('principal_failed', 'Principal resolution failed.', {
      cause: new Error(
        'principal subject must be 1 to 256 characters, without control characters or unpaired surrogates',
      ),
    });
  }
  if (principal.subject.toLowerCase().startsWith(RESERVED_NAMESPACE)) {
    throw new WireError(
      'principal_reserved',
      'The subject namespace "service:" is reserved for the service itself.',
    );
  }
  if (principal.kind !== undefined && principal.kind !== 'user') {
    throw new WireError(
      'principal_kind_refused',
      `A principal of kind "${String(principal.kind)}" cannot call the wire; only users can.`,
    );
  }
  c.set('user', principal);
  if (ctx.anonymous) await adoptAnonymous(ctx, c, principal);
  return principal;
}

/** Cookie of an anonymous session (scoped to the wire's path). */
export const ANONYMOUS_COOKIE = 'service_anon';
const ANONYMOUS_MAX_AGE_S = 30 * 24 * 60 * 60;

/** The visitor's anonymous session: the cookie's, or a new one (its cookie set on the answer). */
async function anonymousPrincipal(ctx: WireContext, c: WireCtx): Promise<Principal> {
  const sessions = ctx.anonymous!;
  const token = getCookie(c, ANONYMOUS_COOKIE);
  const owner = token ? await sessions.owner(token) : null;
  if (owner) return { subject: owner, kind: 'anonymous' };
  const created = await sessions.create();
  addCookie(c, anonymousCookie(ctx, c, created.token, ANONYMOUS_MAX_AGE_S));
  return { subject: created.owner, kind: 'anonymous' };
}

/**
 * A signed-in request that still carries an anonymous cookie: the session's threads and files
 * move to the user (once, whoever asks first), and the cookie is retired either way.
 *
 * The visitor's apps and placements move first, in their own transaction, while the session is
 * still live: if that fails the session is not claimed, the cookie stays, and the next signed-in
 * request tries again, so no app is left behind under a retired session.
 */
async function adoptAnonymous(ctx: WireContext, c: WireCtx, principal: Principal): Promise<void> {
  const token = getCookie(c, ANONYMOUS_COOKIE);
  if (!token) return;
  const visitor = ctx.apps ? await ctx.anonymous!.owner(token) : null;
  const apps = visitor ? await ctx.apps!.store.adoptApps(visitor, principal.subject) : null;
  const adopted = await ctx.anonymous!.adopt(token, principal.subject);
  if (adopted) {
    ctx.audit.record(principal.subject, 'session.adopted', {
      ...adopted,
      ...(apps
        ? {
            apps: apps.apps,
            placements: apps.placements,
            droppedApps: apps.dropped.apps,
            droppedSlots: apps.dropped.slots,
          }
        : {}),
    });
  }
  addCookie(c, anonymousCookie(ctx, c, '', 0));
}

function anonymousCookie(ctx: WireContext, c: WireCtx, value: string, maxAge: number): string {
  const secure = new URL(c.req.url).protocol === 'https:' || ctx.baseUrl?.startsWith('https:') === true;
  return serialize(ANONYMOUS_COOKIE, value, {
    path: BASE_PATH,
    httpOnly: true,
    sameSite: 'Lax',
    maxAge,
    ...(secure ? { secure: true } : {}),
  });
}

function addCookie(c: WireCtx, cookie: string): void {
  c.set('setCookies', [...(c.get('setCookies') ?? []), cookie]);
}

/**
 * Reads a JSON body capped at `maxBodyBytes` (or the route's own smaller cap), guards it (depth,
 * clean text), then validates it. `maxDepth` lets a route that carries an app document take the
 * nesting a document may have.
 */
export async function jsonBody<T extends z.ZodType>(
  ctx: WireContext,
  c: WireCtx,
  schema: T,
  limits: { maxBytes?: number; maxDepth?: number } = {},
): Promise<z.infer<T>> {
  const maxBytes = Math.min(ctx.maxBodyBytes, limits.maxBytes ?? ctx.maxBodyBytes);
  const text = await readBodyText(c.req.raw, { maxBytes, tooLarge: () => tooLarge(maxBytes), notUtf8 });
  // The shared guard: nesting capped, no NUL or lone surrogate in any string.
  return validate(
    schema,
    guardedValue(c, parseJsonInput(text, limits.maxDepth ? { maxDepth: limits.maxDepth } : {})),
    'body',
  );
}

/** JSON is UTF-8 (RFC 8259 §8.1): other bytes are refused, not stored as U+FFFD. */
const notUtf8 = () => new WireError('invalid_json', 'The request body is not valid UTF-8.');

/** The most a route that takes no fields reads of a body: room for `{}` and whitespace. */
const NO_FIELDS_MAX_BYTES = 1024;
const noFieldsSchema = z.strictObject({});

/**
 * The body of a route that takes none (documented as `{}`): nothing at all, or an empty JSON
 * object. Malformed JSON is `invalid_json` and a field is `validation_failed`, as on every route,
 * rather than ignored.
 */
export async function noFields(c: WireCtx): Promise<void> {
  const text = await readBodyText(c.req.raw, {
    maxBytes: NO_FIELDS_MAX_BYTES,
    tooLarge: () => tooLarge(NO_FIELDS_MAX_BYTES),
    notUtf8,
  });
  if (text.trim() === '') return;
  validate(noFieldsSchema, guardedValue(c, parseJsonInput(text)), 'body');
}

/**
 * Reads a chat body as `jsonBody` does, except that of `messages` only the last element is held
 * (and handed on): useChat re-sends the whole history on every turn, and the server owns it. The
 * last message and the other fields are capped at `maxBodyBytes`, the whole body at
 * `maxChatHistoryBytes`; malformed JSON anywhere in it is still `invalid_json`.
 */
export async function chatBody<T extends z.ZodType>(
  ctx: WireContext,
  c: WireCtx,
  schema: T,
): Promise<z.infer<T>> {
  const input = await readJsonKeepingLast(c.req.raw, 'messages', {
    maxPieceBytes: ctx.maxBodyBytes,
    maxTotalBytes: ctx.maxChatHistoryBytes,
    tooLarge: (limit) => (limit === 'piece' ? lastMessageTooLarge(ctx) : historyTooLarge(ctx)),
  });
  return validate(schema, guardedValue(c, input), 'body');
}

/**
 * The parsed body, or the refusal of its text. Without organizations a body's `org` field is
 * refused on every route (402, as `?org=` is), before any route's own validation.
 */
function guardedValue(c: WireCtx, input: JsonInput): unknown {
  if (!input.ok && input.reason === 'syntax') {
    throw new WireError('invalid_json', 'The request body is not valid JSON.');
  }
  if (!input.ok) throw new WireError('validation_failed', input.message);
  const value = input.value;
  if (!c.get('orgsAvailable') && typeof value === 'object' && value !== null && Object.hasOwn(value, 'org')) {
    throw cloudRequired();
  }
  return value;
}

export function validate<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new WireError('validation_failed', describeIssues(parsed.error, { prefix: where, limit: 5 }));
}

/**
 * A list's page cursor in a query (`?cursor=`, `?before=`): what that list hands out, and
 * nothing else (`name` is what the list calls it, `nextCursor` or `nextBefore`).
 */
export function pageCursor(isId: (id: string) => boolean, name: string) {
  return z
    .string()
    .max(120)
    .transform((value, ctx) => {
      const position = positionOf(value, isId);
      if (position) return position;
      ctx.addIssue({ code: 'custom', message: `must be a ${name}` });
      return z.NEVER;
    });
}

/**
 * The query as a plain object. A name given twice (`?limit=5&limit=50`) is refused, as the
 * platform's API and the door refuse it: reading one of the two silently would answer a question
 * the caller may not have asked.
 */
export function queryOf(c: WireCtx): Record<string, string> {
  const query = new Map<string, string>();
  for (const [name, value] of new URL(c.req.url).searchParams) {
    if (query.has(name)) throw new WireError('validation_failed', `query.${name}: given more than once`);
    query.set(name, value);
  }
  return Object.fromEntries(query);
}

/**
 * Without organizations, refuses `?org=` and an `org` body field (402: they need the cloud
 * capability). With them, a body's `org` must name the workspace the request acts in.
 */
export function refuseOrg(c: WireCtx, body?: unknown): void {
  const inBody = typeof body === 'object' && body !== null && 'org' in body;
  if (c.get('orgsAvailable')) {
    const acting = (c.get('principal') as Principal | undefined)?.orgId ?? null;
    if (inBody && (body as { org: unknown }).org !== acting) {
      throw new WireError(
        'validation_failed',
        'body.org: must name the workspace the request acts in (choose it with ?org=).',
      );
    }
    return;
  }
  if (new URL(c.req.url).searchParams.has('org') || inBody) throw cloudRequired();
}

function cloudRequired(): WireError {
  return new WireError(
    'cloud_required',
    'Organizations are not available: this deployment has no cloud capability.',
  );
}

function tooLarge(maxBytes: number): WireError {
  return new WireError('payload_too_large', `The request body is larger than ${maxBytes} bytes.`);
}

function lastMessageTooLarge(ctx: WireContext): WireError {
  return new WireError(
    'payload_too_large',
    `The last message, or the body's other fields together, are larger than ${ctx.maxBodyBytes} bytes.`,
  );
}

function historyTooLarge(ctx: WireContext): WireError {
  return new WireError(
    'payload_too_large',
    `The chat body is larger than ${ctx.maxChatHistoryBytes} bytes (the whole history useChat re-sends ` +
      'included). The service keeps the history itself: send only the last message, with ' +
      'DefaultChatTransport({ prepareSendMessagesRequest: ({ id, messages }) => ' +
      '({ body: { id, messages: messages.slice(-1) } }) }).',
  );
}

/**
 * The user's own credentials, for tools that call the host's API as them ("present" mode):
 * forwarded only when the host's public URL is configured, so they only ever go back to it.
 */
export function presentCredentials(
  ctx: WireContext,
  request: Request,
): { headers: Record<string, string> } | null {
  if (!ctx.baseUrlSet) return null;
  const headers: Record<string, string> = {};
  for (const name of ['authorization', 'cookie']) {
    const value = request.headers.get(name);
    if (value) headers[name] = value;
  }
  return { headers };
}
