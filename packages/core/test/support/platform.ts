import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { post } from '../../src/billing/ledger.js';
import { silentLogger } from '../../src/http/logger.js';
import { ensureAccount } from '../../src/identity/accounts.js';
import { createPlatform, type Platform, type PlatformOptions } from '../../src/platform/create-platform.js';
import type { MembershipRole } from '../../src/store/database.js';
import type { Store } from '../../src/store/index.js';
import { generateEncryptionKey } from '../../src/store/sealing.js';

export interface RunningPlatform {
  platform: Platform;
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
}

/** One sealing key for every platform of a test process, as instances of one deployment share theirs. */
export const TEST_ENCRYPTION_KEY = generateEncryptionKey();

/**
 * Serves a platform over real HTTP on a free loopback port: through its `fetch` on the Node
 * adapter, or (`serving: 'node'`) as `pnpm start` serves it, through its Node listener.
 */
export async function startPlatform(
  store: Store,
  options: Omit<PlatformOptions, 'store'> = {},
  serving: 'fetch' | 'node' = 'fetch',
): Promise<RunningPlatform> {
  const platform = await createPlatform({
    logger: silentLogger,
    env: {},
    encryptionKey: TEST_ENCRYPTION_KEY,
    ...options,
    store,
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    if (serving === 'node') {
      const s = createServer(platform.nodeListener).listen(0, '127.0.0.1', () => resolve(s));
      return;
    }
    const s = serve({ fetch: platform.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  server.on('upgrade', platform.handleUpgrade);
  const { port } = server.address() as AddressInfo;
  return {
    platform,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      });
      await platform.close();
    },
  };
}

export interface TenantFixture {
  tenantId: string;
  userId: string;
  subject: string;
  appId: string;
  connectionId: string;
  appKey: string;
  appKeyId: string;
  connectionKey: string;
  cliKey: string;
}

let counter = 0;

/** A connected `llm-gateway` connection of the tenant on the managed pool, written to the store. */
export function llmConnection(db: Store['db'], tenantId: string) {
  return db
    .insertInto('connections')
    .values({
      tenant_id: tenantId,
      provider: 'llm-gateway',
      profile: 'vendo_managed_pool',
      status: 'connected',
      display_name: 'LLM',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

/** A tenant with an owner, an app, a connection, one key of each kind and `creditMicros` of credit. */
export async function createTenantFixture(platform: Platform, creditMicros = 0): Promise<TenantFixture> {
  const { keys } = platform.context;
  const { db } = platform.store;
  const subject = `test-subject-${process.pid}-${++counter}-${Date.now()}`;
  const { tenantId, userId } = await ensureAccount(db, { subject, email: `${subject}@example.test` });
  const app = await db
    .insertInto('apps')
    .values({ tenant_id: tenantId, slug: 'test-app', name: 'Test app' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const connection = await llmConnection(db, tenantId);
  const appKey = await keys.issue({ tenantId, kind: 'app', appId: app.id });
  const connectionKey = await keys.issue({ tenantId, kind: 'connection', connectionId: connection.id });
  const cliKey = await keys.issue({ tenantId, kind: 'cli', userId });
  if (creditMicros !== 0) {
    await post(db, {
      tenantId,
      amountMicros: creditMicros,
      kind: 'grant',
      idempotencyKey: `fixture-${tenantId}`,
    });
  }
  return {
    tenantId,
    userId,
    subject,
    appId: app.id,
    connectionId: connection.id,
    appKey: appKey.key,
    appKeyId: appKey.id,
    connectionKey: connectionKey.key,
    cliKey: cliKey.key,
  };
}

/**
 * A platform whose base URL is its own loopback address, so the URLs it hands out (purchase
 * pages, their return URL) are the ones a browser can open.
 */
export async function startPlatformAtOwnUrl(
  store: Store,
  options: Omit<PlatformOptions, 'store' | 'baseUrl'> = {},
): Promise<RunningPlatform> {
  let platform: Platform | undefined;
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      { fetch: (request, env) => platform!.fetch(request, env), port: 0, hostname: '127.0.0.1' },
      () => resolve(s),
    );
  });
  server.on('upgrade', (request, socket, head) => platform!.handleUpgrade(request, socket, head));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  platform = await createPlatform({
    logger: silentLogger,
    env: {},
    encryptionKey: TEST_ENCRYPTION_KEY,
    ...options,
    baseUrl: url,
    store,
  });
  return {
    platform,
    url,
    close: async () => {
      await new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      });
      await platform!.close();
    },
  };
}

/** A workspace owner signed in through the development IdP, with an app and its App Key. */
export interface SignedInOwner {
  /** The session cookie (`name=value`). */
  cookie: string;
  tenantId: string;
  appId: string;
  appKey: string;
}

export async function signedInOwner(server: RunningPlatform, email: string): Promise<SignedInOwner> {
  const cookie = await devSignIn(server, email);
  const db = server.platform.store.db;
  const user = await db
    .selectFrom('users')
    .select('default_tenant_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const tenantId = user.default_tenant_id!;
  const app = await db
    .insertInto('apps')
    .values({ tenant_id: tenantId, slug: 'tool', name: 'Tool' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const appKey = await server.platform.context.keys.issue({ tenantId, kind: 'app', appId: app.id });
  return { cookie, tenantId, appId: app.id, appKey: appKey.key };
}

/** Signs `email` in through the development IdP: the session cookie (`name=value`). */
export async function devSignIn(server: RunningPlatform, email: string): Promise<string> {
  const { token } = await server.platform.devIdp!.issueToken({ email });
  const signedIn = await fetch(`${server.url}/api/auth/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  return signedIn.headers.get('set-cookie')!.split(';')[0]!;
}

/**
 * Signs `email` in and makes them `role` in the workspace, which becomes their current one:
 * their session cookie.
 */
export async function signedInTeammate(
  server: RunningPlatform,
  tenantId: string,
  role: MembershipRole,
  email: string,
): Promise<string> {
  const cookie = await devSignIn(server, email);
  const { db } = server.platform.store;
  const user = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
  await db.insertInto('memberships').values({ tenant_id: tenantId, user_id: user.id, role }).execute();
  await db.updateTable('users').set({ default_tenant_id: tenantId }).where('id', '=', user.id).execute();
  return cookie;
}

/**
 * Requests as a signed-in browser sends them: its session cookie and a JSON content type, with
 * redirects left unfollowed (a route's redirect is its answer). An object body is sent as JSON, a
 * string as it is (for malformed bodies). `baseUrl` is read at each call, so a suite can build the
 * client before its server starts.
 */
export function sessionClient(baseUrl: () => string) {
  return (
    cookie: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${baseUrl()}${path}`, {
      method,
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
}
