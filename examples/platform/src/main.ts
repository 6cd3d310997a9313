import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createJsonLogger, describeError } from '@service/core/http';
import { createPlatform } from '@service/core/platform';
import { createStore, generateEncryptionKey, resolveDataDir } from '@service/core/store';
import { startExpressHost } from '@service/example-express-host';
import { seedDeployableDemoTool } from './demo-deploy.js';
import { checkDemoFile, type DemoFileOf, demoFileOf } from './demo-file.js';
import { DEMO_EMAIL, demoServiceKey, recordDemoHost, seedDemo, seedDemoScreen } from './demo-seed.js';
import { withDemoUpstream } from './demo-upstream.js';
import { env, readStartConfig, type StartConfig } from './start-config.js';

/**
 * The platform as a process: store, platform API on PORT, demo seed, settlement journal,
 * graceful shutdown.
 * Configuration comes from the environment (see docs/configuration.md).
 */
const logger = createJsonLogger();
/**
 * The demo (a seeded workspace with free credit and keys, offline stand-in providers, and the demo
 * host, whose sign-in takes any email without a password) runs outside production only.
 */
const demo = process.env.NODE_ENV !== 'production';
const devEncryptionKeyFile = resolve('.service/store-encryption.key');

async function main(): Promise<void> {
  const config = readStartConfig();
  const store = await createStore();
  // The demo file of the store it runs on; one recording another store stops the boot untouched.
  const demoFile = demo ? demoFileOf(process.env.DATABASE_URL, resolveDataDir()) : null;
  if (demoFile) checkDemoFile(demoFile);
  const platform = await createPlatform({
    store,
    logger,
    baseUrl: config.baseUrl,
    encryptionKey: env('SERVICE_STORE_ENCRYPTION_KEY') || developmentEncryptionKey(),
    // Answered metered calls are on disk here before their answer ends (see docs/billing.md).
    journalDir: env('SERVICE_JOURNAL_DIR') ?? `${resolveDataDir()}.journal`,
    // The demo providers' upstream is answered by this instance's own stand-in; in production,
    // every upstream is called over the keep-alive pools.
    ...(demo ? { upstreamFetch: withDemoUpstream() } : {}),
  });
  let stopping = false;
  const listener: RequestListener = (req, res) => {
    // While stopping, each answer closes its connection, so keep-alive clients reconnect elsewhere.
    if (stopping) res.setHeader('connection', 'close');
    platform.nodeListener(req, res);
  };
  // Listen before the demo seed writes anything: a port already taken (a second `pnpm start`)
  // is a startup failure that leaves the demo file as it was.
  const server = await listen(listener, config);
  // WebSocket upgrades to deployed apps go through the app proxy.
  server.on('upgrade', platform.handleUpgrade);
  const address = server.address() as AddressInfo;

  const { seed, demoHost } = demoFile
    ? await startDemo(platform, store, config, demoFile)
    : { seed: null, demoHost: null };
  logger.info('listening', {
    url: platform.context.baseUrl,
    address: `${address.address}:${address.port}`,
    store: store.kind === 'postgres' ? 'postgres' : `pglite:${resolveDataDir()}`,
    ...(store.embedded ? { store_runs: store.embedded } : {}),
    demo: demo,
    demo_seeded: seed?.created ?? false,
    ...(demoFile ? { demo_file: demoFile.path } : {}),
  });
  if (seed?.tenantId && demoHost && demoFile) {
    process.stdout.write(
      `\nPlatform ready at ${platform.context.baseUrl}\nDashboard: ${platform.context.baseUrl}/ (sign in as ${DEMO_EMAIL} for the demo workspace, or any email for a new one)\nChat page of the demo host: ${demoHost.url}/\nOrders page of the demo host: ${demoHost.url}/orders (a slot for your apps, with ${DEMO_EMAIL}'s saved screen My orders in it; components to remix)\nApps and review pages of the demo host: ${demoHost.url}/apps, ${demoHost.url}/review (reviewers: HOST_REVIEWERS, default reviewer@example.com)\nDemo keys and URLs: ${demoFile.path}${seed.wroteFile ? ' (written now)' : ''}\n\n`,
    );
  }

  /**
   * Graceful shutdown: stop accepting; end event streams (with a retry hint); let metered calls and
   * the demo host's turns in flight finish and settle every answered call, up to
   * SERVICE_SHUTDOWN_GRACE_MS; give leased credit back; then cut what is left and exit 0. A call still unsettled then (the store is away) is in
   * the settlement journal, which the next boot settles.
   */
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const { graceMs } = config;
    logger.info('shutting down', { signal, grace_ms: graceMs });
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Connections go as they fall idle (Node closes only those idle at close()).
    const sweep = setInterval(() => {
      server.closeIdleConnections();
    }, 50);
    try {
      // The demo host's turns in flight get the same grace as the platform's metered calls.
      const cutConnections = () => server.closeAllConnections();
      await Promise.all([platform.close({ graceMs, cutConnections }), demoHost?.close({ graceMs })]);
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      server.closeAllConnections();
      clearInterval(sweep);
      await store.close();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error('shutdown failed', describeError(error));
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  stopWhenParentExits(stop);
}

/**
 * Under `pnpm start` this process is the child of a shell, itself pnpm's child, and neither passes
 * a SIGTERM on: a supervisor that signals only the process it started (Docker, a script's `kill`)
 * ends pnpm and leaves this one running, holding the port and the data folder. So, run as a
 * package script, it stops as on SIGTERM once the process that started it is gone (looked at each
 * second). Started any other way (`nohup node …`), it outlives its parent as usual.
 */
function stopWhenParentExits(stop: (signal: string) => Promise<void>): void {
  if (!process.env.npm_lifecycle_event) return;
  const parent = process.ppid;
  // Orphaned, this process is adopted at once (by init or a subreaper): its parent id changes
  // the moment the parent ends, where asking for the old id still finds it until it is reaped.
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    void stop('parent exited');
  }, 1000);
  timer.unref();
}

/**
 * The demo: the seeded workspace and its deployable tool, and the demo host app (wire + tools +
 * MCP door) on the same store, on SERVICE_DEMO_HOST_PORT, else PORT + 1. The door's service key
 * is kept in the demo file (the door stores only its hash).
 */
async function startDemo(
  platform: Awaited<ReturnType<typeof createPlatform>>,
  store: Awaited<ReturnType<typeof createStore>>,
  config: StartConfig,
  demoFile: DemoFileOf,
) {
  const seed = await seedDemo(platform, demoFile);
  if (seed.tenantId) await seedDeployableDemoTool(platform);
  const serviceKey = demoServiceKey(demoFile.path);
  const demoHost = await startDemoHost(store, serviceKey, config);
  recordDemoHost(demoFile, demoHost, serviceKey);
  // The demo user's saved screen on the orders page. A demo nicety: failing, the platform still runs.
  if (seed.tenantId) {
    await seedDemoScreen(demoFile.path, demoHost).catch((error: unknown) => {
      logger.warn('demo screen not seeded', describeError(error));
    });
  }
  return { seed, demoHost };
}

/** Serves the platform on PORT; rejects (a startup failure) when the port cannot be had. */
function listen(listener: RequestListener, { port, hostname }: StartConfig): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(listener);
    server.once('error', reject);
    server.listen(port, hostname, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/**
 * Outside production, without SERVICE_STORE_ENCRYPTION_KEY, stored credentials are sealed with a
 * key kept beside the data in `.service/store-encryption.key` (mode 0600), made on first boot.
 * Production refuses to start without the variable.
 */
function developmentEncryptionKey(): string | undefined {
  if (process.env.NODE_ENV === 'production') return undefined;
  if (existsSync(devEncryptionKeyFile)) return readFileSync(devEncryptionKeyFile, 'utf8').trim();
  mkdirSync(dirname(devEncryptionKeyFile), { recursive: true, mode: 0o700 });
  writeFileSync(devEncryptionKeyFile, `${generateEncryptionKey()}\n`, { mode: 0o600 });
  chmodSync(devEncryptionKeyFile, 0o600);
  return readFileSync(devEncryptionKeyFile, 'utf8').trim();
}

/** Starts the Express demo host; when PORT + 1 is taken, on any free port (demo.json says which). */
async function startDemoHost(
  store: Awaited<ReturnType<typeof createStore>>,
  serviceKey: string,
  { port, hostname, demoHostPort }: StartConfig,
) {
  const hostPort = demoHostPort ?? (port === 0 ? 0 : port + 1);
  const start = (p: number) => startExpressHost({ store, port: p, hostname, logger, serviceKey });
  const host = await start(hostPort).catch((error: NodeJS.ErrnoException) => {
    if (demoHostPort !== undefined || error.code !== 'EADDRINUSE') throw error;
    return start(0);
  });
  process.stdout.write(
    `Demo host app (wire at /api/service) at ${host.url}\nMCP door of the demo host: ${host.mcpUrl}\n`,
  );
  return host;
}

main().catch((error: unknown) => {
  logger.error('startup failed', describeError(error));
  process.exit(1);
});
