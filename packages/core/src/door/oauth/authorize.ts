/**
 * `/authorize` (RFC 6749 §4.1 with PKCE, RFC 7636). The door redirects to a redirect URI only
 * once it trusts it (RFC 9700 §4.11.2): after a click on its consent page, or for an error, when
 * the signed-in user has already approved this client. Every other refusal is a page for the
 * user: a missing or unknown client, an unregistered redirect URI, and any error in the request
 * of a client this user never approved. Redirects carry `iss` (RFC 9207).
 *
 * @see RFC 6749 §4.1.2.1, RFC 7636 §4.4.1, RFC 8707 §2, RFC 9207, RFC 9700 §4.11.2
 */
import { SCOPES } from '../config.js';
import type { DoorContext } from '../context.js';
import { authorizationErrorPage, consentPage, consentProblemPage } from '../pages/consent.js';
import { withoutOfflineAccess } from '../scopes.js';
import { isWellFormedChallenge } from '../secrets.js';
import type { AuthorizationRequest, RegisteredClient } from '../storage/clients.js';
import { namesResource } from '../urls.js';
import { OAuthError, type OAuthErrorCode, redirectWithError } from './errors.js';
import { isFormRequest, MAX_FORM_BYTES, readCapped, unstorableField } from './form.js';
import { formActionSource, isRegisteredRedirect } from './redirect-uri.js';

/** The exact text the door's contract gives for a PKCE violation. */
export const PKCE_REQUIRED = 'PKCE with S256 is required';
const MAX_STATE_LENGTH = 2048;

type Validated =
  | { ok: true; request: Omit<AuthorizationRequest, 'subject'>; client: RegisteredClient }
  | { ok: false; response: Response };

export async function handleAuthorize(context: DoorContext, request: Request): Promise<Response> {
  const legacy = typeof context.oauth.session !== 'function';
  if (request.method === 'POST' && !legacy) return decide(context, request);
  if (request.method !== 'GET' && request.method !== 'POST') {
    return new Response(null, { status: 405, headers: { allow: 'GET, POST' } });
  }
  const params = new URL(request.url).searchParams;
  const returnTo = `${context.config.urls.authorize}?${params.toString()}`;
  const validated = await validate(context, params, request, returnTo);
  if (!validated.ok) return validated.response;
  const authRequest = validated.request;
  const scopes = authRequest.scopes;
  const clientName = validated.client.clientName ?? validated.client.clientId;

  if (legacy) {
    // The adapter owns sign-in, consent, CSRF and replay protection; `{ subject }` means approved.
    const outcome = await context.oauth.authorize!(request, { clientName, scopes, consent: null });
    if (outcome instanceof Response) return outcome;
    // No code for an account that cannot be used, here as on the modern path.
    if (!(await context.oauth.principal(outcome.subject))) {
      return consentProblemPage(context.config, 403, 'Your account cannot be used here.');
    }
    await context.clients.recordConsent(outcome.subject, authRequest.clientId, scopes);
    return issueAndRedirect(
      context,
      { ...authRequest, subject: outcome.subject },
      request.method === 'POST' ? 303 : 302,
    );
  }

  const session = await context.oauth.session!(request, { returnTo });
  if (session instanceof Response) return session;
  const principal = await context.oauth.principal(session.subject);
  if (!principal) return consentProblemPage(context.config, 403, 'Your account cannot be used here.');
  const account = [principal.email, principal.name].find((v) => typeof v === 'string' && v.trim() !== '');
  const { transaction, csrfToken } = await context.clients.openTransaction({
    ...authRequest,
    subject: session.subject,
  });
  const consent = {
    action: context.config.urls.authorize,
    transaction,
    csrfToken,
    redirectOrigin: formActionSource(authRequest.redirectUri),
  };
  if (typeof context.oauth.authorize === 'function') {
    const rendered = await context.oauth.authorize(request, { clientName, scopes, consent });
    if (rendered instanceof Response) return rendered;
    // With `session`, `authorize` only renders consent; approval comes back through the form.
    throw new Error('oauth.authorize must answer a consent page (Response) when oauth.session is set');
  }
  return consentPage(context.config, {
    clientName,
    publishedBy: validated.client.publishedBy,
    account: (account as string | undefined) ?? principal.subject,
    scopes,
    redirectUri: authRequest.redirectUri,
    action: consent.action,
    transaction,
    csrfToken,
  });
}

/** Checks an authorization request in the order RFC 6749 §4.1.2.1 requires. */
async function validate(
  context: DoorContext,
  params: URLSearchParams,
  request: Request,
  returnTo: string,
): Promise<Validated> {
  const refuse = (description: string, code: OAuthErrorCode = 'invalid_request') => ({
    ok: false as const,
    response: authorizationErrorPage(context.config, new OAuthError(code, description)),
  });
  for (const name of [
    'client_id',
    'redirect_uri',
    'response_type',
    'state',
    'code_challenge',
    'code_challenge_method',
    'scope',
    'resource',
  ]) {
    if (params.getAll(name).length > 1) return refuse(`${name} must not be repeated`);
  }
  // Checked before the client lookup: the store cannot hold such text, and nothing is trusted yet.
  const unstorable = unstorableField(params);
  if (unstorable !== null) return refuse(`${unstorable} contains a NUL character or invalid Unicode`);
  const clientId = params.get('client_id');
  const redirectUri = params.get('redirect_uri');
  if (!clientId) return refuse('client_id is required');
  if (!redirectUri) return refuse('redirect_uri is required');
  const { client, problem } = await context.clients.lookup(clientId);
  if (!client) return refuse(problem);
  if (!isRegisteredRedirect(client.redirectUris, redirectUri)) {
    return refuse('redirect_uri does not match a redirect URI registered for this client');
  }
  const state = params.get('state');
  if (state !== null && state.length > MAX_STATE_LENGTH) return refuse('state is too long');

  const checked = checkRequest(context, params, client);
  if (!('error' in checked)) {
    return { ok: true, client, request: { clientId, redirectUri, state, ...checked } };
  }
  // The redirect URI is registered, but anyone can register one: the error goes back to it only
  // for a user who already approved this client, and is shown to everyone else.
  if (!(await approvedBySignedInUser(context, request, returnTo, clientId))) {
    return refuse(checked.error.description, checked.error.code);
  }
  return {
    ok: false,
    response: redirectWithError(redirectUri, checked.error, state, context.config.urls.issuer),
  };
}

/** The rest of the request, once the client and its redirect URI are known: the grant asked for. */
function checkRequest(
  context: DoorContext,
  params: URLSearchParams,
  client: RegisteredClient,
): Pick<AuthorizationRequest, 'codeChallenge' | 'scopes' | 'resource'> | { error: OAuthError } {
  const fail = (code: OAuthErrorCode, description: string) => ({ error: new OAuthError(code, description) });
  if (params.get('response_type') !== 'code')
    return fail('unsupported_response_type', 'response_type must be code');
  const challenge = params.get('code_challenge');
  if (params.get('code_challenge_method') !== 'S256' || !challenge || !isWellFormedChallenge(challenge)) {
    return fail('invalid_request', PKCE_REQUIRED);
  }
  // An empty `scope` is no scope asked for: the default applies (RFC 6749 §3.3).
  const requested = params.get('scope')?.trim() || null;
  const registered = typeof client.metadata.scope === 'string' ? client.metadata.scope : null;
  // `offline_access` alone asks for nothing here either: the default applies.
  const asked = requested === null ? [] : withoutOfflineAccess(requested);
  const scopes = asked.length > 0 ? asked : withoutOfflineAccess(registered ?? SCOPES.join(' '));
  const unknown = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0) return fail('invalid_scope', `Unknown scope: ${unknown.join(', ')}`);
  // A client's registered scope is what it may ask for (RFC 7591 §2), not only its default.
  const beyond = registered === null ? [] : scopes.filter((scope) => !registered.split(' ').includes(scope));
  if (beyond.length > 0) {
    return fail('invalid_scope', `Scope beyond the client's registered scope: ${beyond.join(', ')}`);
  }
  const resource = params.get('resource');
  if (resource !== null && !namesResource(resource, context.config.urls.resource)) {
    return fail('invalid_target', `resource must be ${context.config.urls.resource}`);
  }
  return {
    codeChallenge: challenge,
    scopes: scopes.length > 0 ? [...new Set(scopes)] : [...SCOPES],
    resource: resource === null ? null : context.config.urls.resource,
  };
}

/**
 * Whether the signed-in user has approved this client before. A legacy adapter's sign-in cannot be
 * asked without it taking over the request, so there nobody counts as having approved.
 */
async function approvedBySignedInUser(
  context: DoorContext,
  request: Request,
  returnTo: string,
  clientId: string,
): Promise<boolean> {
  if (typeof context.oauth.session !== 'function') return false;
  const session = await context.oauth.session(request, { returnTo });
  if (session instanceof Response) return false;
  return (await context.clients.consentOf(session.subject, clientId)) !== null;
}

/** `POST /authorize` from the consent page: `transaction`, `csrf_token`, `decision=approve|deny`. */
async function decide(context: DoorContext, request: Request): Promise<Response> {
  const problem = (status: number, message: string) => consentProblemPage(context.config, status, message);
  // Login-CSRF style guard: a cross-site page cannot post a decision for the signed-in user.
  const origin = request.headers.get('origin');
  if (origin !== null && origin !== context.config.urls.origin) {
    return problem(403, 'The consent form was posted from another site.');
  }
  if (!isFormRequest(request)) return problem(400, 'The consent form must be posted as a form.');
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readCapped(request, MAX_FORM_BYTES));
  } catch (error) {
    if (error instanceof OAuthError) return problem(error.status, error.description);
    throw error;
  }
  if (unstorableField(form) !== null) {
    return problem(400, 'The consent form must not contain NUL characters or invalid Unicode.');
  }
  // Each field once: with two decisions, which one the user meant is not the form's to guess.
  if (['transaction', 'csrf_token', 'decision'].some((name) => form.getAll(name).length > 1)) {
    return problem(400, 'The consent form must send each of its fields once.');
  }
  const transaction = form.get('transaction');
  const csrfToken = form.get('csrf_token');
  const decision = form.get('decision');
  if (!transaction || !csrfToken)
    return problem(400, 'The consent form is missing its transaction or CSRF token.');
  if (decision !== 'approve' && decision !== 'deny') return problem(400, 'decision must be approve or deny.');

  const session = await context.oauth.session!(request, { returnTo: context.config.urls.authorize });
  if (session instanceof Response) return problem(403, 'You are no longer signed in.');
  const pending = await context.clients.claimTransaction(transaction, csrfToken, session.subject);
  if (!pending) return problem(400, 'This authorization request has expired or was already answered.');
  if (pending === 'wrong-csrf') {
    // Not claimed: the form this transaction was shown with can still answer it.
    return problem(403, 'The consent form did not come from this authorization page: open the link again.');
  }
  if (pending === 'another-user') {
    // Not claimed: the user it was opened for can still answer it.
    return problem(403, 'This authorization request belongs to another signed-in user.');
  }
  if (decision === 'deny') {
    context.logger.info('door.consent_denied', { client_id: pending.clientId });
    return redirectWithError(
      pending.redirectUri,
      new OAuthError('access_denied', 'The user denied access'),
      pending.state,
      context.config.urls.issuer,
      303,
    );
  }
  await context.clients.recordConsent(pending.subject, pending.clientId, pending.scopes);
  return issueAndRedirect(context, pending, 303);
}

async function issueAndRedirect(
  context: DoorContext,
  request: AuthorizationRequest,
  status: 302 | 303,
): Promise<Response> {
  const code = await context.grants.issueCode(request);
  const target = new URL(request.redirectUri);
  target.searchParams.set('code', code);
  if (request.state !== null) target.searchParams.set('state', request.state);
  target.searchParams.set('iss', context.config.urls.issuer);
  context.logger.info('door.code_issued', { client_id: request.clientId });
  return new Response(null, {
    status,
    headers: { location: target.toString(), 'cache-control': 'no-store' },
  });
}
