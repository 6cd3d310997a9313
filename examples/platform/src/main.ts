import { resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { createJsonLogger, describeError } from '@service/core/http';
import { createPlatform } from '@service/core/platform';
import { createStore, resolveDataDir } from '@service/core/store';
import { seedDemo } from './demo-seed.js';

/**
 * The platform as a process: store, platform API on PORT, demo seed, graceful shutdown.
 * Configuration comes from the environment (see docs/configuration.md).
 */
const logger = createJsonLogger();
const port = parsePort(process.env.PORT ?? '8787');
const hostname = process.env.HOST ?? '127.0.0.1';
const demoFile = resolve('.service/demo.json');

async function main(): Promise<void> {
  const usesPostgres = Boolean(process.env.DATABASE_URL);
  const store = await createStore();
  const platform = await createPlatform({
    store,
    logger,
    baseUrl: process.env.SERVICE_BASE_URL ?? `http://localhost:${port}`,
  });
  const seed = await seedDemo(platform, demoFile);

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
    server.close(async () => {
      clearTimeout(force);
      await store.close();
      logger.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
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
