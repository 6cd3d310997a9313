import { type Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { exportJWK, generateKeyPair, importJWK, type JSONWebKeySet, type JWK, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { type BodyLimit, BodyTooLargeError, readBodyText, readFormFields } from '../http/body.js';
import { flatError, NO_STORE } from '../http/errors.js';
import { escapeHtml, htmlDocument, htmlPageHeaders } from '../http/html.js';
import { parseJsonInput, textProblem } from '../http/input-guard.js';
import { describeIssues } from '../http/issues.js';
import { safeReturnTo } from '../http/return-to.js';
import { uuidOfText } from '../internal/uuid.js';
import type { Database } from '../store/database.js';
import { Accounts } from './accounts.js';
import { isCrossOrigin, secureCookiesFor, startSession } from './session-cookie.js';
import { SESSION_COOKIE, SessionStore } from './sessions.js';

/**
 * The built-in development identity provider: signs identity JWTs for any email address so the
 * whole stack runs offline. It runs only when no `SERVICE_IDP_URL` is configured and never in
 * production (`createPlatform` refuses that), because it vouches for whoever asks.
 *
 * @see docs/identity.md
 */
export interface DevIdentityProvider {
  /** `{baseUrl}/auth/v1` — the `iss` of tokens it signs. */
  readonly issuer: string;
  /** The public signing key as a JWK set (never the private half). */
  jwks(): Promise<JSONWebKeySet>;
  /** Signs a one-hour identity JWT for an email address; the same email always gets the same subject. */
  issueToken(input: {
    email: string;
    name?: string;
  }): Promise<{ token: string; subject: string; expiresIn: number }>;
  /** The IdP's HTTP routes, to be mounted at `/auth/v1`. */
  routes(): Hono;
}

export interface DevIdentityProviderOptions {
  /** Public URL of the platform; the issuer is `{baseUrl}/auth/v1`. */
  baseUrl: string;
  now?: () => number;
}

/** Identity-token lifetime: one hour (the API contract's credential rules). */
export const DEV_TOKEN_TTL_SECONDS = 60 * 60;
/** The audience the hosted IdP puts in user tokens; ours matches so tokens look alike. */
export const DEV_TOKEN_AUDIENCE = 'authenticated';
/**
 * The one signing key lives in a fixed row, so instances racing to create it all insert the same
 * primary key: one insert wins, the rest do nothing, and everyone reads the winner back.
 */
const SIGNING_KEY_ID = 'dev-es256-1';
const ALG = 'ES256';
/** Form and JSON bodies here are a few fields; anything bigger is refused before parsing. */
const BODY_LIMIT: BodyLimit = { maxBytes: 16 * 1024 };

const requiredString = (field: string) =>
  z.string({
    error: (issue) => (issue.input === undefined ? `${field} is required` : `${field} must be a string`),
  });
const emailSchema = requiredString('email')
  .trim()
  .max(254, 'email is too long')
  .pipe(z.email('email is not a valid address'));
const nameSchema = requiredString('name')
  .trim()
  .max(200, 'name is too long')
  // The input guard's text rule (no NUL, no lone surrogate): the name is stored with the user.
  .refine((name) => textProblem(name) === null, 'name must not hold a NUL or an unpaired surrogate');
const identitySchema = z.object(
  { email: emailSchema, name: nameSchema.optional() },
  { error: 'Request body must be a JSON object: { "email": "..." }' },
);

/**
 * Opens (or, on first use of a database, creates) the development IdP's ES256 key and returns
 * the provider. Every instance sharing the database signs with the same key, across restarts.
 */
export async function createDevIdentityProvider(
  db: Kysely<Database>,
  options: DevIdentityProviderOptions,
): Promise<DevIdentityProvider> {
  const now = options.now ?? Date.now;
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const issuer = `${baseUrl}/auth/v1`;
  const key = await loadSigningKey(db);
  const sessionDeps = {
    accounts: new Accounts(db),
    sessions: new SessionStore(db, now),
    secureCookies: secureCookiesFor(baseUrl),
  };

  const issueToken: DevIdentityProvider['issueToken'] = async (input) => {
    const email = normalizeEmail(input.email);
    const subject = subjectForEmail(email);
    const issuedAt = Math.floor(now() / 1000);
    const name = input.name?.trim();
    const token = await new SignJWT({ email, ...(name ? { name } : {}) })
      .setProtectedHeader({ alg: ALG, kid: SIGNING_KEY_ID, typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(issuer)
      .setAudience(DEV_TOKEN_AUDIENCE)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + DEV_TOKEN_TTL_SECONDS)
      .sign(key.privateKey);
    return { token, subject, expiresIn: DEV_TOKEN_TTL_SECONDS };
  };

  const routes = () => {
    const app = new Hono();
    app.onError((error) => {
      if (error instanceof BodyTooLargeError) return flatError(413, 'Request body too large');
      throw error;
    });

    app.get('/.well-known/jwks.json', (c) =>
      c.json({ keys: [key.publicJwk] }, 200, { 'cache-control': 'public, max-age=600' }),
    );

    // How scripts and curl get an identity JWT offline.
    app.post('/token', async (c) => {
      let text: string;
      try {
        text = await readBodyText(c.req.raw, BODY_LIMIT);
      } catch (error) {
        if (error instanceof BodyTooLargeError) throw error;
        // A body the client broke off: not a request we can read.
        return flatError(400, 'Request body must be JSON: { "email": "..." }', {}, NO_STORE);
      }
      const input = parseJsonInput(text);
      if (!input.ok || text.trim() === '') {
        const message =
          input.ok || input.reason === 'syntax'
            ? 'Request body must be JSON: { "email": "..." }'
            : input.message;
        return flatError(400, message, {}, NO_STORE);
      }
      const parsed = identitySchema.safeParse(input.value);
      if (!parsed.success) return flatError(400, firstIssue(parsed.error), {}, NO_STORE);
      const issued = await issueToken(parsed.data);
      return c.json(
        {
          access_token: issued.token,
          token_type: 'bearer',
          expires_in: issued.expiresIn,
          user: { id: issued.subject, email: normalizeEmail(parsed.data.email) },
        },
        200,
        NO_STORE,
      );
    });

    app.get('/sign-in', (c) =>
      page(c, 200, {
        returnTo: safeReturnTo(c.req.query('return_to')),
        email: (c.req.query('login_hint') ?? '').slice(0, 254),
      }),
    );

    app.post('/sign-in', async (c) => {
      const form = await readFormFields(c.req.raw, BODY_LIMIT);
      // Login CSRF: a cross-site form must not sign the browser in as someone else.
      if (isCrossOrigin(c.req.header('origin'), baseUrl, c.req.url)) {
        return flatError(403, 'Cross-origin sign-in refused');
      }
      const returnTo = safeReturnTo(form.return_to);
      const parsed = identitySchema.safeParse({
        email: form.email,
        ...(typeof form.name === 'string' && form.name.trim() ? { name: form.name } : {}),
      });
      if (!parsed.success) {
        const email = typeof form.email === 'string' ? form.email.slice(0, 254) : '';
        return page(c, 400, { returnTo, email, error: firstIssue(parsed.error) });
      }
      const email = normalizeEmail(parsed.data.email);
      const signedIn = await startSession(
        sessionDeps,
        { subject: subjectForEmail(email), email, name: parsed.data.name ?? null },
        getCookie(c, SESSION_COOKIE),
      );
      setCookie(c, signedIn.cookie.name, signedIn.cookie.value, signedIn.cookie.options);
      c.header('cache-control', 'no-store');
      return c.redirect(returnTo, 303);
    });

    return app;
  };

  return { issuer, jwks: async () => ({ keys: [key.publicJwk] }), issueToken, routes };
}

/** The subject of an email: a UUID from SHA-256 of the normalized address, so it never changes. */
export function subjectForEmail(email: string): string {
  return uuidOfText(`service-dev-idp:${normalizeEmail(email)}`);
}

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

interface SigningKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function loadSigningKey(db: Kysely<Database>): Promise<SigningKey> {
  const read = () =>
    db
      .selectFrom('dev_idp_keys')
      .select(['private_jwk', 'public_jwk'])
      .where('kid', '=', SIGNING_KEY_ID)
      .executeTakeFirst();
  let row = await read();
  if (!row) {
    const pair = await generateKeyPair(ALG, { extractable: true });
    const meta = { kid: SIGNING_KEY_ID, alg: ALG, use: 'sig' };
    await db
      .insertInto('dev_idp_keys')
      .values({
        kid: SIGNING_KEY_ID,
        private_jwk: JSON.stringify({ ...(await exportJWK(pair.privateKey)), ...meta }),
        public_jwk: JSON.stringify({ ...(await exportJWK(pair.publicKey)), ...meta }),
      })
      .onConflict((oc) => oc.column('kid').doNothing())
      .execute();
    row = await read();
    if (!row) throw new Error('The development IdP signing key could not be stored');
  }
  const privateKey = await importJWK(row.private_jwk as JWK, ALG);
  if (!(privateKey instanceof CryptoKey)) throw new Error('The development IdP signing key is malformed');
  // Publish only the public members, whatever else the stored row may carry.
  const { kty, crv, x, y, kid, alg, use } = row.public_jwk as JWK;
  return { privateKey, publicJwk: { kty, crv, x, y, kid, alg, use } };
}

function firstIssue(error: z.ZodError): string {
  // Every schema here words its own messages, naming the field.
  return describeIssues(error, { limit: 1, paths: false });
}

// No script at all; inline styles only; the form may post only back here.
const PAGE_HEADERS = htmlPageHeaders({ formTargets: ["'self'"] });

const PAGE_STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
label{display:block;margin:.75rem 0 .25rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1rem}.note{color:#666;font-size:.875rem}.error{color:#b00020}`;

function page(c: Context, status: 200 | 400, view: { returnTo: string; email: string; error?: string }) {
  const error = view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>` : '';
  const body = `<h1>Sign in</h1>
<p class="note">Development identity provider: any email address signs in. Not available in production.</p>
${error}
<form method="post" action="sign-in">
<input type="hidden" name="return_to" value="${escapeHtml(view.returnTo)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" required maxlength="254" autocomplete="email" value="${escapeHtml(view.email)}">
<label for="name">Name (optional)</label>
<input id="name" name="name" type="text" maxlength="200" autocomplete="name">
<button type="submit">Sign in</button>
</form>`;
  const html = htmlDocument({ title: 'Sign in (development)', style: PAGE_STYLE, body });
  return c.body(html, status, PAGE_HEADERS);
}
