import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { post } from '@service/core/billing';
import { mintServiceKey } from '@service/core/door';
import { ensureAccount } from '@service/core/identity';
import type { Platform } from '@service/core/platform';
import { upsertProvider } from '@service/core/proxy';
import type { RunningHost } from '@service/example-express-host';
import { seedOrdersScreen } from '@service/example-express-host/demo-screen';
import type { DemoFileOf } from './demo-file.js';
import { ensureDemoIntegrations } from './demo-integrations.js';
import { seedDemoTools } from './demo-tools.js';
import { DEMO_UPSTREAM_ORIGIN } from './demo-upstream.js';

export const DEMO_EMAIL = 'demo@example.com';
/** The demo wallet's opening credit: USD 25. Posted once, under a fixed idempotency key. */
export const DEMO_CREDIT_MICROS = 25_000_000;
const DEMO_CREDIT_KEY = 'demo-seed:opening-credit';
const DEMO_APP_SLUG = 'demo-tool';
const DEMO_KEY_NAME = 'demo';

export interface DemoFile {
  /** The store the demo was seeded into (`DemoFileOf.store`): its keys work there only. */
  store: string;
  baseUrl: string;
  tenantId: string;
  appId: string;
  connectionId: string;
  searchConnectionId: string;
  user: { email: string; signInUrl: string | null; tokenUrl: string | null };
  keys: { appKey: string; connectionKey: string };
  urls: Record<string, string>;
  openingCreditMicros: number;
  writtenAt: string;
  /** The demo user's saved screen on the demo host, once seeded (`seedDemoScreen`). */
  demoScreen?: { appId: string };
}

export interface SeedResult {
  /** True when this boot created the demo tenant. */
  created: boolean;
  /** True when keys were (re)issued and the demo file written. */
  wroteFile: boolean;
  tenantId: string;
}

/**
 * Seeds the demo on an empty store and writes the demo file (mode 0600). On later boots the
 * seed is re-used: nothing is credited again. Keys are stored only as hashes, so when the demo
 * file is gone the demo keys are re-issued (the old ones revoked) and the file written anew.
 */
export async function seedDemo(
  platform: Platform,
  { path: demoFilePath, store }: DemoFileOf,
): Promise<SeedResult> {
  const { keys, baseUrl } = platform.context;
  const { db } = platform.store;
  const subject = platform.devIdp
    ? (await platform.devIdp.issueToken({ email: DEMO_EMAIL })).subject
    : 'demo-user';

  const existing = await db
    .selectFrom('users')
    .select('default_tenant_id')
    .where('idp_subject', '=', subject)
    .executeTakeFirst();
  const hasTenants = await db.selectFrom('tenants').select('id').limit(1).executeTakeFirst();
  if (!existing?.default_tenant_id && hasTenants) {
    // Someone else's data lives here: this is not an empty store, so no demo is planted.
    return { created: false, wroteFile: false, tenantId: '' };
  }

  const created = !existing?.default_tenant_id;
  // The catalog first: the demo's connections name its integrations.
  await ensureDemoIntegrations(platform);
  const demo = created
    ? await createDemoTenant(platform, subject)
    : await findDemo(platform, existing!.default_tenant_id!);
  await ensureDemoProviders(platform);
  await bindDemoConnections(platform, demo);
  await seedDemoTools(platform, demo.appId);
  // Idempotent by key: a second boot, or two racing first boots, credit once.
  await post(db, {
    tenantId: demo.tenantId,
    amountMicros: DEMO_CREDIT_MICROS,
    kind: 'grant',
    idempotencyKey: DEMO_CREDIT_KEY,
    description: 'Demo opening credit',
  });

  if (!created && existsSync(demoFilePath)) return { created, wroteFile: false, tenantId: demo.tenantId };

  const live = await db
    .selectFrom('api_keys')
    .select('id')
    .where('tenant_id', '=', demo.tenantId)
    .where('name', '=', DEMO_KEY_NAME)
    .where('revoked_at', 'is', null)
    .execute();
  for (const key of live) await keys.revoke(key.id, demo.tenantId);
  const appKey = await keys.issue({
    tenantId: demo.tenantId,
    kind: 'app',
    appId: demo.appId,
    name: DEMO_KEY_NAME,
  });
  const connectionKey = await keys.issue({
    tenantId: demo.tenantId,
    kind: 'connection',
    connectionId: demo.connectionId,
    name: DEMO_KEY_NAME,
  });

  const file: DemoFile = {
    store,
    baseUrl,
    tenantId: demo.tenantId,
    appId: demo.appId,
    connectionId: demo.connectionId,
    searchConnectionId: demo.searchConnectionId,
    user: {
      email: DEMO_EMAIL,
      signInUrl: platform.devIdp ? `${baseUrl}/auth/v1/sign-in` : null,
      tokenUrl: platform.devIdp ? `${baseUrl}/auth/v1/token` : null,
    },
    keys: { appKey: appKey.key, connectionKey: connectionKey.key },
    urls: {
      health: `${baseUrl}/healthz`,
      balance: `${baseUrl}/api/billing/balance`,
      legacyBalance: `${baseUrl}/api/v1/balance`,
      cliBalance: `${baseUrl}/api/cli/balance`,
      session: `${baseUrl}/api/auth/me`,
      connections: `${baseUrl}/api/deployments/me/connections`,
      events: `${baseUrl}/api/deployments/me/events`,
      llmProxy: `${baseUrl}/proxy/llm-gateway/v1`,
      searchProxy: `${baseUrl}/proxy/web-search`,
    },
    openingCreditMicros: DEMO_CREDIT_MICROS,
    writtenAt: new Date().toISOString(),
  };
  writeSecretFile(demoFilePath, `${JSON.stringify(file, null, 2)}\n`);
  return { created, wroteFile: true, tenantId: demo.tenantId };
}

interface DemoIds {
  tenantId: string;
  appId: string;
  connectionId: string;
  searchConnectionId: string;
}

async function createDemoTenant(platform: Platform, subject: string): Promise<DemoIds> {
  const { db } = platform.store;
  const { tenantId } = await ensureAccount(db, { subject, email: DEMO_EMAIL, name: 'Demo' });
  await db.updateTable('tenants').set({ name: 'Demo workspace' }).where('id', '=', tenantId).execute();
  const app = await db
    .insertInto('apps')
    .values({ tenant_id: tenantId, slug: DEMO_APP_SLUG, name: 'Demo tool' })
    .onConflict((oc) => oc.columns(['tenant_id', 'slug']).doUpdateSet({ name: 'Demo tool' }))
    .returning('id')
    .executeTakeFirstOrThrow();
  const connection = await db
    .insertInto('connections')
    .values({
      tenant_id: tenantId,
      provider: 'llm-gateway',
      profile: 'vendo_managed_pool',
      status: 'connected',
      display_name: 'LLM Gateway',
      connected_at: new Date(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const search = await db
    .insertInto('connections')
    .values({
      tenant_id: tenantId,
      provider: 'web-search',
      profile: 'vendo_managed_pool',
      status: 'connected',
      display_name: 'Web search',
      connected_at: new Date(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { tenantId, appId: app.id, connectionId: connection.id, searchConnectionId: search.id };
}

async function findDemo(platform: Platform, tenantId: string): Promise<DemoIds> {
  const { db } = platform.store;
  const app = await db
    .selectFrom('apps')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('slug', '=', DEMO_APP_SLUG)
    .executeTakeFirstOrThrow();
  const connectionOf = (provider: string) =>
    db
      .selectFrom('connections')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('provider', '=', provider)
      .orderBy('created_at')
      .executeTakeFirstOrThrow();
  return {
    tenantId,
    appId: app.id,
    connectionId: (await connectionOf('llm-gateway')).id,
    searchConnectionId: (await connectionOf('web-search')).id,
  };
}

/**
 * The demo's metered providers, served offline by the demo upstream of whichever instance takes
 * the call (see `DEMO_UPSTREAM_ORIGIN`): an OpenAI-compatible gateway at USD 0.15 / 0.60 per
 * million input / output tokens (`demo-large`: 3 / 15, as its model listing says), and search at USD 0.005 a call (before the margin). Re-written
 * at each boot (the same rows on every instance), which also moves a store seeded by an older
 * version off an upstream on one instance's own port.
 */
async function ensureDemoProviders(platform: Platform): Promise<void> {
  const { sealer } = platform.context;
  const { db } = platform.store;
  const upstream = DEMO_UPSTREAM_ORIGIN;
  await upsertProvider(db, sealer, {
    slug: 'llm-gateway',
    upstreamUrl: `${upstream}/llm`,
    dialect: 'openai',
    credential: sealer ? 'demo-pool-credential' : null,
    freeRoutes: ['GET /v1/models'],
    holdMicros: 10_000,
    rates: [
      { meter: 'input_tokens', unitPriceMicros: '0.15', public: true },
      { meter: 'output_tokens', unitPriceMicros: '0.6', public: true },
      // The larger model's own price, as the gateway's model listing publishes it.
      { meter: 'input_tokens', model: 'demo-large', unitPriceMicros: '3', public: true },
      { meter: 'output_tokens', model: 'demo-large', unitPriceMicros: '15', public: true },
    ],
  });
  await upsertProvider(db, sealer, {
    slug: 'web-search',
    upstreamUrl: upstream,
    dialect: 'per_call',
    rates: [{ meter: 'call', unitPriceMicros: '5000', public: true }],
  });
}

/** The demo app reaches both demo connections. */
async function bindDemoConnections(platform: Platform, demo: DemoIds): Promise<void> {
  await platform.store.db
    .insertInto('app_connections')
    .values(
      [demo.connectionId, demo.searchConnectionId].map((connectionId) => ({
        app_id: demo.appId,
        connection_id: connectionId,
        tenant_id: demo.tenantId,
      })),
    )
    .onConflict((oc) => oc.columns(['app_id', 'connection_id']).doNothing())
    .execute();
}

/** Writes a file readable only by its owner, tightening the mode of an existing file too. */
function writeSecretFile(path: string, contents: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, contents, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The demo host app: where it runs, how a script or a browser signs in, and its MCP door. */
export interface DemoHost {
  url: string;
  wire: string;
  signIn: { method: 'POST'; url: string; body: { email: string }; use: string; page: string };
  mcp: DemoHostDoor;
}

/** The demo host's MCP door: what an MCP client is given, and a backend's service key. */
export interface DemoHostDoor {
  /** Add this URL to any MCP client; it signs in at `signIn.page` and consents in the browser. */
  url: string;
  /** The setup page, with steps per client. */
  connect: string;
  /** The RFC 8693 exchange: `client_id` + this key as `client_secret`, `subject_token` a user. */
  tokenUrl: string;
  clientId: 'service';
  serviceKey: string;
  subjectToken: string;
}

/**
 * The demo host's service key: the one recorded in the demo file, else a new one (first boot, or
 * the file was written anew). The door keeps only the key's hash, so the file is where it lives.
 */
export function demoServiceKey(demoFilePath: string): string {
  if (existsSync(demoFilePath)) {
    const file = JSON.parse(readFileSync(demoFilePath, 'utf8')) as { host?: Partial<DemoHost> };
    const key = file.host?.mcp?.serviceKey;
    if (typeof key === 'string' && key.startsWith('mcp_svc_')) return key;
  }
  return mintServiceKey();
}

/** Adds (or refreshes) the demo host block of the demo file, keeping everything else. */
export function recordDemoHost(
  { path: demoFilePath, store }: DemoFileOf,
  host: { url: string; mcpUrl: string },
  serviceKey: string,
): void {
  if (!existsSync(demoFilePath)) return;
  const file = JSON.parse(readFileSync(demoFilePath, 'utf8')) as DemoFile & { host?: DemoHost };
  // A file of an earlier version records no store: it is this one's (checkDemoFile let it through).
  file.store ??= store;
  file.host = {
    url: host.url,
    wire: `${host.url}/api/service`,
    signIn: {
      method: 'POST',
      url: `${host.url}/login`,
      body: { email: DEMO_EMAIL },
      use: 'Send the answer\'s token as "Authorization: Bearer <token>" (or keep its host_session cookie)',
      page: `${host.url}/login`,
    },
    mcp: {
      url: host.mcpUrl,
      connect: `${host.mcpUrl}/connect`,
      tokenUrl: `${host.mcpUrl}/token`,
      clientId: 'service',
      serviceKey,
      subjectToken: `user:${DEMO_EMAIL}`,
    },
  };
  writeSecretFile(demoFilePath, `${JSON.stringify(file, null, 2)}\n`);
}

/**
 * The demo user's saved screen on the demo host: "My orders", placed beside their orders, seeded
 * through the host's wire once per demo file (the file records it). So a restart adds no second
 * one, and a person who deleted it does not get it back, until the demo file is written anew
 * (then it is seeded again, unless they have an app named "My orders").
 */
export async function seedDemoScreen(
  demoFilePath: string,
  host: Pick<RunningHost, 'url' | 'service' | 'sessionFor'>,
): Promise<void> {
  if (!existsSync(demoFilePath)) return;
  const recorded = JSON.parse(readFileSync(demoFilePath, 'utf8')) as DemoFile;
  if (recorded.demoScreen) return;
  const { appId } = await seedOrdersScreen(host, DEMO_EMAIL);
  // Read again: keep whatever else the file holds now.
  const file = JSON.parse(readFileSync(demoFilePath, 'utf8')) as DemoFile;
  file.demoScreen = { appId };
  writeSecretFile(demoFilePath, `${JSON.stringify(file, null, 2)}\n`);
}
