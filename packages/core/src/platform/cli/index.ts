import { Hono } from 'hono';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { accountRoutes } from './account.js';
import { bootstrapRoutes } from './bootstrap.js';
import { type CliRoutesOptions, readSshBroker } from './options.js';
import { sshRoutes } from './ssh.js';

/**
 * The platform side of the developer CLI: the login bootstrap page, `whoami`, `logout` and ssh
 * sessions. Mounted at the origin root by `createPlatform`.
 *
 * @see docs/cli.md
 */
export function cliRoutes(ctx: PlatformContext, options: CliRoutesOptions): Hono<PlatformEnv> {
  const broker = readSshBroker(options.env);
  const app = new Hono<PlatformEnv>();
  app.route('/', bootstrapRoutes(ctx, options));
  app.route('/', accountRoutes(ctx));
  app.route('/', sshRoutes(ctx, broker));
  return app;
}

export { csrfTokenFor } from './bootstrap.js';
export { type LoopbackCallback, parseLoopbackCallback } from './loopback-callback.js';
export type { CliRoutesOptions, SshBrokerSettings } from './options.js';
