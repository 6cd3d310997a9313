/**
 * A platform server as its own process, for tests that kill it: serves on a free loopback port
 * over the store at DATABASE_URL and prints `listening <url>` once ready. With
 * SERVICE_JOURNAL_DIR it keeps its settlement journal there.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { silentLogger } from '../../src/http/logger.js';
import { createPlatform } from '../../src/platform/create-platform.js';
import { createStore } from '../../src/store/index.js';

const store = await createStore({ url: process.env.DATABASE_URL });
const journalDir = process.env.SERVICE_JOURNAL_DIR;
const platform = await createPlatform({
  store,
  logger: silentLogger,
  env: process.env,
  ...(journalDir ? { journalDir } : {}),
});
const server = serve({ fetch: platform.fetch, port: 0, hostname: '127.0.0.1' }, () => {
  process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
