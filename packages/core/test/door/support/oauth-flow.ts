/**
 * The OAuth steps a client takes against a running door, spelled out with plain fetch so suites
 * can stop at any step and tamper with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { type DoorHost, USER_COOKIE } from './door-host.js';

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface TestClient {
  clientId: string;
  redirectUri: string;
}

export async function register(
  host: Pick<DoorHost, 'url'>,
  metadata: Record<string, unknown> = {},
): Promise<TestClient> {
  const redirectUri = `${host.url}/callback`;
  const response = await fetch(`${host.url}/api/service/mcp/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Test client', redirect_uris: [redirectUri], ...metadata }),
  });
  if (response.status !== 201)
    throw new Error(`register answered ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { client_id: string; redirect_uris: string[] };
  return { clientId: body.client_id, redirectUri: body.redirect_uris[0]! };
}

/** Signs `subject` in at the stand-in host (the test cookie) and makes their principal resolve. */
export function signIn(host: DoorHost, subject: string): string {
  host.users.set(subject, { subject, kind: 'user', name: subject });
  return `${USER_COOKIE}=${encodeURIComponent(subject)}`;
}

export function authorizeUrl(
  host: Pick<DoorHost, 'url'>,
  client: TestClient,
  challenge: string,
  extra: Record<string, string | null> = {},
): string {
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'state-123',
    scope: 'read write',
    ...extra,
  };
  const url = new URL(`${host.url}/api/service/mcp/authorize`);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
  return url.toString();
}

export interface ConsentTicket {
  transaction: string;
  csrfToken: string;
  html: string;
  response: Response;
}

/** GETs the authorize URL as a signed-in browser and reads the consent form's hidden fields. */
export async function openConsent(url: string, cookie: string): Promise<ConsentTicket> {
  const response = await fetch(url, { headers: { cookie }, redirect: 'manual' });
  const html = await response.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';
  return { transaction: field('transaction'), csrfToken: field('csrf_token'), html, response };
}

export async function postConsent(
  host: Pick<DoorHost, 'url'>,
  cookie: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${host.url}/api/service/mcp/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

/** Registration, consent and approval: the authorization code and the PKCE pair used. */
export async function authorizeCode(
  host: DoorHost,
  subject = 'user-1',
  client?: TestClient,
  extra: Record<string, string | null> = {},
): Promise<{ code: string; client: TestClient; pkce: Pkce; cookie: string }> {
  const registered = client ?? (await register(host));
  const pair = pkce();
  const cookie = signIn(host, subject);
  const ticket = await openConsent(authorizeUrl(host, registered, pair.challenge, extra), cookie);
  const answer = await postConsent(host, cookie, {
    transaction: ticket.transaction,
    csrf_token: ticket.csrfToken,
    decision: 'approve',
  });
  const location = new URL(answer.headers.get('location') ?? '');
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code in ${location}`);
  return { code, client: registered, pkce: pair, cookie };
}

export async function tokenRequest(
  host: Pick<DoorHost, 'url'>,
  fields: Record<string, string>,
): Promise<Response> {
  return fetch(`${host.url}/api/service/mcp/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  token_type: string;
  scope: string;
}

/** The token request that exchanges a flow's code, answered as it is. */
export function codeExchange(
  host: Pick<DoorHost, 'url'>,
  flow: { code: string; client: TestClient; pkce: Pkce },
): Promise<Response> {
  return tokenRequest(host, {
    grant_type: 'authorization_code',
    code: flow.code,
    client_id: flow.client.clientId,
    redirect_uri: flow.client.redirectUri,
    code_verifier: flow.pkce.verifier,
  });
}

export async function exchange(
  host: Pick<DoorHost, 'url'>,
  flow: { code: string; client: TestClient; pkce: Pkce },
): Promise<TokenSet> {
  const response = await codeExchange(host, flow);
  if (response.status !== 200) throw new Error(`token answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as TokenSet;
}

/** A full authorization: tokens for `subject`. */
export async function tokensFor(
  host: DoorHost,
  subject = 'user-1',
): Promise<TokenSet & { client: TestClient }> {
  const flow = await authorizeCode(host, subject);
  return { ...(await exchange(host, flow)), client: flow.client };
}

/** A JSON-RPC answer; suites assert on its fields, whatever their shape. */
// biome-ignore lint/suspicious/noExplicitAny: results are asserted field by field with expect()
export type RpcMessage = { result?: any; error?: any };

/** One JSON-RPC call over the MCP endpoint; answers the parsed JSON-RPC message. */
export async function rpc(
  host: Pick<DoorHost, 'url'>,
  token: string | null,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: RpcMessage | null; raw: string }> {
  const response = await fetch(`${host.url}/api/service/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const raw = await response.text();
  let body = null;
  const data = raw
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));
  try {
    body = JSON.parse(data.length > 0 ? data[data.length - 1]! : raw);
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, raw };
}

export const INITIALIZE_PARAMS = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'raw-test', version: '1.0.0' },
};
