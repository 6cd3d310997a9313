import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { createJsonLogger, describeError } from '@service/core/http';
import { createPlatform } from '@service/core/platform';
import { createStore, generateEncryptionKey, resolveDataDir } from '@service/core/store';
import { startExpressHost } from '@service/example-express-host';
import { demoServiceKey, recordDemoHost, seedDemo } from './demo-seed.js';
import { withDemoUpstream } from './demo-upstream.js';

/**
 * The platform as a process: store, platform API on PORT, demo seed, graceful shutdown.
 * Configuration comes from the environment (see docs/configuration.md).
 */
const logger = createJsonLogger();
const port = parsePort(process.env.PORT ?? '8787');
const hostname = process.env.HOST ?? '127.0.0.1';
const demoFile = resolve('.service/demo.json');
const devEncryptionKeyFile = resolve('.service/store-encryption.key');

async function main(): Promise<void> {
  const usesPostgres = Boolean(process.env.DATABASE_URL);
  const store = await createStore();
  const platform = await createPlatform({
    store,
    logger,
    baseUrl: process.env.SERVICE_BASE_URL ?? `http://localhost:${port}`,
    encryptionKey: process.env.SERVICE_STORE_ENCRYPTION_KEY || developmentEncryptionKey(),
    // The demo providers' upstream is answered by this instance's own stand-in.
    upstreamFetch: withDemoUpstream(),
  });
  const seed = await seedDemo(platform, demoFile);
  // The demo host app (wire + tools + MCP door) on the same store: SERVICE_DEMO_HOST_PORT, else
  // PORT + 1. Its door's service key is kept in the demo file (the door stores only its hash).
  const serviceKey = demoServiceKey(demoFile);
  const demoHost = await startDemoHost(store, serviceKey);
  recordDemoHost(demoFile, demoHost, serviceKey);
  const server = serve({ fetch: platform.fetch, port, hostname }, (info) => {
    logger.info('listening', {
      url: platform.context.baseUrl,
      address: `${info.address}:${info.port}`,
      store: usesPostgres ? 'postgres' : `pglite:${resolveDataDir()}`,
      demo_seeded: seed.created,
    });
    if (seed.tenantId) {
      process.stdout.write(
        `\nPlatform ready at ${platform.context.baseUrl}\nDemo keys and URLs: ${demoFile}${seed.wroteFile ? ' (written now)' : ''}\n\n`,
      );
    }
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    // Stop accepting, let in-flight requests finish, then give up on stragglers after 10 s.
    const force = setTimeout(() => {
      if ('closeAllConnections' in server) server.closeAllConnections();
    }, 10_000);
    force.unref();
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    // Open event streams end now, so their clients reconnect (elsewhere) instead of holding us up.
    void platform.close();
    server.close(async () => {
      clearTimeout(force);
      await demoHost.close();
      await store.close();
      logger.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
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
async function startDemoHost(store: Awaited<ReturnType<typeof createStore>>, serviceKey: string) {
  const wanted = process.env.SERVICE_DEMO_HOST_PORT;
  const hostPort = wanted ? parsePort(wanted) : port === 0 ? 0 : port + 1;
  const start = (p: number) => startExpressHost({ store, port: p, hostname, logger, serviceKey });
  const host = await start(hostPort).catch((error: NodeJS.ErrnoException) => {
    if (wanted || error.code !== 'EADDRINUSE') throw error;
    return start(0);
  });
  process.stdout.write(
    `Demo host app (wire at /api/service) at ${host.url}\nMCP door of the demo host: ${host.mcpUrl}\n`,
  );
  return host;
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new Error(`PORT must be an integer from 0 to 65535, got "${value}"`);
  }
  return n;
}

main().catch((error: unknown) => {
  logger.error('startup failed', describeError(error));
  process.exit(1);
});
