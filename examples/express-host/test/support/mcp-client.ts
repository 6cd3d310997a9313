/**
 * What an outside MCP client does against the demo host's door, with the real MCP SDK client:
 * an in-memory OAuth client provider, the browser steps spelled out over fetch (sign in on the
 * host's `/login` form, post the consent form), and the service-key exchange.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

export { MemoryOAuthProvider } from '../../../../packages/core/test/support/mcp-oauth-client.js';

export function newClient(): Client {
  return new Client({ name: 'demo-door-test', version: '1.0.0' });
}

/** Every response of the browser steps, for suites to assert on. */
export interface BrowserSteps {
  /** GET of the authorization URL while signed out: 302 to the host's sign-in page. */
  signedOut: Response;
  /** The sign-in page (`GET /login?return_to=...`). */
  loginPage: { response: Response; html: string };
  /** The sign-in form's post: 303 back to the authorization URL, with the session cookie. */
  signedIn: Response;
  cookie: string;
  /** The consent page, reached with the cookie. */
  consent: { response: Response; html: string };
  /** The consent form's post: 303 to the client's redirect URI. */
  approved: Response;
  /** Where the browser lands: the client's redirect URI with `code`, `state`, `iss`. */
  callback: URL;
}

/**
 * A browser, without the browser: opens the authorization URL, follows the door to the host's
 * sign-in page, signs in as `email` with the form, and approves on the consent page.
 */
export async function signInAndApprove(authorizationUrl: URL, email: string): Promise<BrowserSteps> {
  const get = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers, redirect: 'manual' });
  const postForm = (url: string, fields: Record<string, string>, headers: Record<string, string>) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
      redirect: 'manual',
    });
  const origin = authorizationUrl.origin;

  const signedOut = await get(authorizationUrl.href);
  const loginUrl = new URL(signedOut.headers.get('location') ?? '', origin);
  const loginResponse = await get(loginUrl.href);
  const loginHtml = await loginResponse.text();
  const form = (html: string, name: string) =>
    decodeEntities(new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '');

  const signedIn = await postForm(
    new URL('/login', origin).href,
    { email, return_to: form(loginHtml, 'return_to') },
    { origin },
  );
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const consentResponse = await get(new URL(signedIn.headers.get('location') ?? '', origin).href, { cookie });
  const consentHtml = await consentResponse.text();
  const approved = await postForm(
    new URL('/api/service/mcp/authorize', origin).href,
    {
      transaction: form(consentHtml, 'transaction'),
      csrf_token: form(consentHtml, 'csrf_token'),
      decision: 'approve',
    },
    { cookie, origin },
  );
  return {
    signedOut,
    loginPage: { response: loginResponse, html: loginHtml },
    signedIn,
    cookie,
    consent: { response: consentResponse, html: consentHtml },
    approved,
    callback: new URL(approved.headers.get('location') ?? 'about:blank'),
  };
}

/** The RFC 8693 service-key exchange at the door's token endpoint. */
export function exchangeServiceKey(
  mcpUrl: string,
  fields: { key: string; subject: string; clientId?: string },
): Promise<Response> {
  return fetch(`${mcpUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: TOKEN_EXCHANGE,
      client_id: fields.clientId ?? 'service',
      client_secret: fields.key,
      subject_token: fields.subject,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    }),
  });
}

/** An MCP client connected with a bearer token it already holds (no OAuth provider). */
export async function connectWithBearer(mcpUrl: string, accessToken: string): Promise<Client> {
  const client = newClient();
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
    }),
  );
  return client;
}

function decodeEntities(value: string): string {
  return value.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) =>
    name === 'amp' ? '&' : name === 'lt' ? '<' : name === 'gt' ? '>' : name === 'quot' ? '"' : "'",
  );
}
