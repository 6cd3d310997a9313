/**
 * A stand-in host for black-box door suites: a plain fetch handler that mounts the door the way
 * the adapters do (origin-root `wellKnown` first, then `handle`), a sign-in page setting a test
 * cookie, and an OAuth adapter over it. Served over real HTTP on loopback.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { z } from 'zod';
import {
  type ActAs,
  type ActAsGrant,
  type AnyHostTool,
  createToolRegistry,
  type Principal,
  type ToolContext,
} from '../../../src/agent/tools.js';
import {
  createDoor,
  type Door,
  type DoorMcpOptions,
  type DoorOAuthAdapter,
  type DoorOptions,
} from '../../../src/door/index.js';
import type { Logger } from '../../../src/http/logger.js';
import type { Store } from '../../../src/store/index.js';

export const USER_COOKIE = 'test_user';

export interface Clock {
  now(): number;
  advance(ms: number): void;
}

export function createClock(): Clock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance: (ms) => {
      offset += ms;
    },
  };
}

export interface ActAsCall {
  principal: Principal;
  grant: ActAsGrant;
}

export interface DoorHost {
  url: string;
  door: Door;
  clock: Clock;
  /** Subjects whose principal resolves; delete one to simulate a deleted account. */
  users: Map<string, Principal>;
  actAsCalls: ActAsCall[];
  /** Tool executions, with the credentials actAs minted. */
  executions: Array<{ tool: string; input: unknown; headers: Record<string, string> }>;
  warnings: Array<{ message: string; fields?: Record<string, unknown> }>;
  logs: Array<{ level: string; message: string; fields?: Record<string, unknown> }>;
  close(): Promise<void>;
}

export interface DoorHostOptions {
  mcp?: DoorMcpOptions;
  /** Replaces parts of the stand-in adapter (e.g. a legacy `authorize` without `session`). */
  oauth?: Partial<DoorOAuthAdapter> & { withoutSession?: boolean };
  actAs?: ActAs | null;
  tools?: AnyHostTool[];
  overrides?: DoorOptions['overrides'];
  env?: Record<string, string | undefined>;
  fetch?: typeof fetch;
  authCacheTtlMs?: number;
  progressIntervalMs?: number;
  /** Serve on this exact base path prefix (e.g. `/app`). */
  basePath?: string;
  registrationLimit?: DoorOptions['registrationLimit'];
  failedCredentialLimit?: DoorOptions['failedCredentialLimit'];
  /** How client ID metadata documents are reached (a local server standing in for the client's). */
  clientDocumentTransport?: DoorOptions['clientDocumentTransport'];
  /** Serve as another instance of the door at this canonical URL (its own address stays `url`). */
  canonicalUrl?: string;
}

/** The default tools: one of each risk label, plus ones the menu must leave out. */
export function defaultTools(): AnyHostTool[] {
  return [
    {
      name: 'list_notes',
      title: 'List notes',
      description: 'Lists your notes',
      input: z.object({ tag: z.string().optional() }),
      risk: 'read',
      execute: async (input: { tag?: string }) => ({ notes: ['first', 'second'], tag: input.tag ?? null }),
    },
    {
      name: 'create_note',
      description: 'Creates a note',
      input: z.object({ text: z.string().min(1) }),
      risk: 'write',
      execute: async (input: { text: string }) => ({ created: input.text }),
    },
    {
      name: 'delete_note',
      description: 'Deletes a note',
      input: z.object({ id: z.string() }),
      risk: 'destructive',
      needsApproval: false,
      execute: async (input: { id: string }) => ({ deleted: input.id }),
    },
    {
      name: 'archive_note',
      description: 'Archives a note (needs approval)',
      input: z.object({ id: z.string() }),
      risk: 'destructive',
      execute: async (input: { id: string }, context: ToolContext) => ({
        archived: input.id,
        grant: context.grant?.id ?? null,
      }),
    },
    {
      name: 'ungraded_tool',
      description: 'A tool without a risk label',
      input: { type: 'object', properties: {} },
      execute: async () => 'plain text result',
    },
    {
      name: 'internal_tool',
      description: 'Only for the embedded agent',
      input: { type: 'object', properties: {} },
      audience: 'internal',
      execute: async () => 'internal',
    },
    {
      name: 'disabled_tool',
      description: 'Switched off',
      input: { type: 'object', properties: {} },
      enabled: false,
      execute: async () => 'disabled',
    },
    {
      name: 'failing_tool',
      description: 'Always throws',
      input: { type: 'object', properties: {} },
      risk: 'read',
      execute: async () => {
        throw new Error('the notes service is down');
      },
    },
  ] as AnyHostTool[];
}

export async function startDoorHost(store: Store, options: DoorHostOptions = {}): Promise<DoorHost> {
  const clock = createClock();
  const users = new Map<string, Principal>();
  const actAsCalls: ActAsCall[] = [];
  const executions: DoorHost['executions'] = [];
  const warnings: DoorHost['warnings'] = [];
  const logs: DoorHost['logs'] = [];
  const logger: Logger = {
    info: (message, fields) => logs.push({ level: 'info', message, fields }),
    warn: (message, fields) => {
      warnings.push({ message, fields });
      logs.push({ level: 'warn', message, fields });
    },
    error: (message, fields) => logs.push({ level: 'error', message, fields }),
  };
  let handler: (request: Request, connection: unknown) => Promise<Response> = async () =>
    new Response('starting', { status: 503 });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: (request, env) => handler(request, env), port: 0, hostname: '127.0.0.1' }, () =>
      resolve(s),
    );
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const basePath = options.basePath ?? '';
  const url = `${origin}${basePath}`;

  const adapter: DoorOAuthAdapter = {
    session: (request, { returnTo }) => {
      const subject = cookieOf(request, USER_COOKIE);
      if (subject && users.has(subject)) return { subject };
      return new Response(null, {
        status: 302,
        headers: { location: `${url}/sign-in?return_to=${encodeURIComponent(returnTo)}` },
      });
    },
    principal: (subject) => users.get(subject) ?? null,
    ...options.oauth,
  };
  if (options.oauth?.withoutSession) delete adapter.session;

  const tools = (options.tools ?? defaultTools()).map((tool) => ({
    ...tool,
    execute: async (input: unknown, context: ToolContext) => {
      const { credentials } = context as ToolContext & { credentials?: { headers: Record<string, string> } };
      executions.push({ tool: tool.name, input, headers: credentials?.headers ?? {} });
      return tool.execute(input, context);
    },
  })) as AnyHostTool[];
  const actAs: ActAs | null =
    options.actAs === undefined
      ? async (principal, grant) => {
          actAsCalls.push({ principal, grant });
          return { headers: { authorization: `Bearer host-session-of-${principal.subject}` } };
        }
      : options.actAs;

  const door = createDoor({
    mcp: { baseUrl: options.canonicalUrl ?? url, productName: 'Notes <Test>', ...options.mcp },
    oauth: adapter,
    store,
    tools: createToolRegistry(tools),
    ...(actAs ? { actAs } : {}),
    ...(options.overrides ? { overrides: options.overrides } : {}),
    logger,
    env: options.env ?? {},
    now: clock.now,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    authCacheTtlMs: options.authCacheTtlMs ?? 0,
    ...(options.progressIntervalMs ? { progressIntervalMs: options.progressIntervalMs } : {}),
    // Suites register a client per test from one address: only the limit's own test sets one.
    registrationLimit: options.registrationLimit ?? false,
    failedCredentialLimit: options.failedCredentialLimit ?? false,
    ...(options.clientDocumentTransport ? { clientDocumentTransport: options.clientDocumentTransport } : {}),
  });

  // Like the adapters: the connection info (the socket address) goes along with the request.
  handler = async (request, connection) => {
    const known = (await door.wellKnown(request)) ?? (await door.handle(request, connection));
    if (known) return known;
    const { pathname, searchParams } = new URL(request.url);
    if (pathname === `${basePath}/sign-in` && request.method === 'GET') {
      return new Response(signInPage(searchParams.get('return_to') ?? '/'), {
        headers: { 'content-type': 'text/html; charset=utf-8' },
      });
    }
    if (pathname === `${basePath}/sign-in` && request.method === 'POST') {
      const form = new URLSearchParams(await request.text());
      const subject = form.get('subject') ?? '';
      users.set(subject, { subject, kind: 'user', name: subject });
      const returnTo = form.get('return_to') ?? '/';
      return new Response(null, {
        status: 303,
        headers: {
          location: returnTo.startsWith(url) ? returnTo : url,
          'set-cookie': `${USER_COOKIE}=${encodeURIComponent(subject)}; Path=/; HttpOnly; SameSite=Lax`,
        },
      });
    }
    if (pathname === `${basePath}/callback`) {
      return new Response(`callback ${searchParams.toString()}`, {
        headers: { 'content-type': 'text/plain' },
      });
    }
    return new Response('host 404', { status: 404 });
  };

  return {
    url,
    door,
    clock,
    users,
    actAsCalls,
    executions,
    warnings,
    logs,
    close: async () => {
      await new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      });
      await door.close();
    },
  };
}

function cookieOf(request: Request, name: string): string | null {
  const header = request.headers.get('cookie') ?? '';
  for (const part of header.split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return null;
}

function signInPage(returnTo: string): string {
  const escaped = returnTo.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html><html><body><form method="post" action="sign-in">
<input type="hidden" name="return_to" value="${escaped}">
<input id="subject" name="subject"><button type="submit">Sign in</button></form></body></html>`;
}
