/**
 * `pnpm bench door`: authenticated `tools/call` through the MCP door (bearer lookup, principal
 * re-resolved, consent check, actAs, input parsing, audit log, the SDK's Streamable HTTP
 * transport) against a bare MCP SDK server without authentication serving the same tool the same
 * way (a stateless SDK server and web-standard transport per request). Target: at least
 * 0.7 of the bare server's throughput.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createToolRegistry } from '@service/core/agent';
import { createDoor } from '@service/core/door';
import { silentLogger } from '@service/core/http';
import { createStore } from '@service/core/store';
import { z } from 'zod';
import { type BenchOutcome, compare, report, serveOnLoopback, type Target } from './support/measure.js';

const TARGET = 0.7;

const echo = (input: { text: string }) => ({ echoed: input.text });

export async function doorBenchmark(): Promise<BenchOutcome> {
  const store = await createStore({ url: 'memory://' });
  // The door's canonical URL is where it is served, so the handler is bound once the port is known.
  let handler = async (_request: Request) => new Response(null, { status: 503 });
  const subject = await serveOnLoopback((request) => handler(request));
  const door = createDoor({
    mcp: { baseUrl: subject.url, productName: 'Bench' },
    oauth: {
      session: () => ({ subject: 'bench-user' }),
      principal: (name) => ({ subject: name, kind: 'user' }),
    },
    store,
    tools: createToolRegistry([
      {
        name: 'echo',
        description: 'Echoes its text',
        input: z.object({ text: z.string() }),
        risk: 'read',
        execute: echo,
      },
    ]),
    actAs: async (principal) => ({ headers: { authorization: `Bearer host-${principal.subject}` } }),
    logger: silentLogger,
    env: {},
  });
  handler = async (request) => (await door.handle(request)) ?? new Response(null, { status: 404 });
  const token = await authorize(handler, subject.url);

  const bare = await serveOnLoopback(bareMcpServer);
  try {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'hello' } },
    });
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    };
    const subjectTarget: Target = {
      url: `${subject.url}/api/service/mcp`,
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${token}` },
      body,
    };
    const baselineTarget: Target = { url: `${bare.url}/mcp`, method: 'POST', headers, body };
    await sanityCheck(subjectTarget);
    await sanityCheck(baselineTarget);
    const measured = await compare(subjectTarget, baselineTarget);
    return report(
      'MCP tools/call through the door (OAuth bearer, actAs) vs a bare MCP SDK server without auth',
      measured.subject,
      measured.baseline,
      TARGET,
    );
  } finally {
    await subject.close();
    await bare.close();
    await store.close();
  }
}

/** The baseline: the SDK's stateless server and web-standard transport, the same tool, no auth. */
async function bareMcpServer(request: Request): Promise<Response> {
  const server = new Server({ name: 'Bare', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{ name: 'echo', description: 'Echoes its text', inputSchema: { type: 'object' } }],
  }));
  const input = z.object({ text: z.string() });
  server.setRequestHandler(CallToolRequestSchema, async (call) => {
    const result = echo(input.parse(call.params.arguments));
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  return transport.handleRequest(request);
}

/** Registration, consent and code exchange through the door itself: a real access token. */
async function authorize(fetchDoor: (request: Request) => Promise<Response>, base: string): Promise<string> {
  const mcp = `${base}/api/service/mcp`;
  const call = (path: string, init: RequestInit) => fetchDoor(new Request(`${mcp}${path}`, init));
  const redirectUri = 'http://127.0.0.1/callback';
  const client = await (
    await call('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], client_name: 'bench' }),
    })
  ).json();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'read write',
  });
  const html = await (await call(`/authorize?${query}`, {})).text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';
  const approved = await call('/authorize', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      transaction: field('transaction'),
      csrf_token: field('csrf_token'),
      decision: 'approve',
    }),
  });
  const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;
  const tokens = await (
    await call('/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        client_id: client.client_id,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    })
  ).json();
  return tokens.access_token;
}

async function sanityCheck(target: Target): Promise<void> {
  const response = await fetch(target.url, {
    method: 'POST',
    headers: target.headers ?? {},
    body: target.body ?? null,
  });
  const text = await response.text();
  if (response.status !== 200 || !text.includes('"echoed":"hello"')) {
    throw new Error(`${target.url} answered ${response.status}: ${text.slice(0, 200)}`);
  }
}
