/**
 * The demo host: an Express app with its own sign-in, a chat page at `/`, an orders page at
 * `/orders` (with a slot for the person's apps and host components they may remix), the person's
 * apps at `/apps`, the review queue at `/review` (for reviewers), the service wire
 * mounted at `/api/service` with the MCP door on (and the door's discovery handler at
 * `/.well-known`), and a few host tools.
 *
 * @see docs/wire.md "Drive a turn with curl"
 * @see docs/door.md "The door in the demo host"
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { createJsonLogger, type Logger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { type AppSeed, createService, remixableHashes, type Service } from '@service/core/wire';
import { withService } from '@service/express';
import express from 'express';
import { demoApps, reviewersFrom } from './apps.js';
import { chatPageRoutes } from './chat-page.js';
import { createDemoModel } from './demo-model.js';
import { demoDoor, PRODUCT_NAME } from './door.js';
import { jsonErrorHandler } from './json-errors.js';
import { createSignIn } from './sign-in.js';
import { signInRoutes } from './sign-in-routes.js';
import { OrderBooks, orderTools } from './tools.js';

export interface ExpressHostOptions {
  /** Port to listen on; 0 picks a free one. */
  port?: number;
  hostname?: string;
  /**
   * The host's public URL (scheme, host, port; no path), the MCP door's canonical URL. Default:
   * the URL it listens on, `http://127.0.0.1:<port>`. The `SERVICE_BASE_URL` of `env` is not read
   * (under `pnpm start` it is the platform's).
   */
  baseUrl?: string;
  /** The shared store (the platform's, under `pnpm start`). Default: `createStore()`. */
  store?: Store;
  /** Default: the offline demo model. */
  model?: LanguageModelV3;
  /** Default: `NODE_ENV !== 'production'`. */
  development?: boolean;
  /** Secret of the sign-in tokens. Default `HOST_SESSION_SECRET`, else random per process. */
  sessionSecret?: string;
  /** A key for the door's service-key exchange (`mintServiceKey()`); none: the exchange is off. */
  serviceKey?: string;
  logger?: Logger;
  env?: Record<string, string | undefined>;
  /** Where the built chat page is. Default: the chat UI package's `dist/` (its `build` writes it). */
  chatAssetsDir?: string;
  /**
   * Who may review review remixes (emails). Default: `HOST_REVIEWERS` of `env` (comma-separated),
   * else `reviewer@example.com`.
   */
  reviewers?: string[];
  /**
   * The remixable components' seeds in place of `src/apps.ts`'s (tests: a restart on the same
   * store with a changed seed is the host shipping a changed component).
   */
  seeds?: AppSeed[];
  /**
   * The folder `service sync` ran in: its `.service/remixables.json` gives each seed the source
   * hash of its `<Remixable>` wrapper, so changing a wrapped component and syncing again drifts
   * people's remixes of it. Default: `HOST_REMIXABLES_DIR` of `env`; unset, the seeds carry no
   * source hash (their documents alone count).
   */
  remixablesDir?: string;
}

export interface RunningHost {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The MCP door: `{baseUrl}/api/service/mcp` (its setup page is `{mcpUrl}/connect`). */
  mcpUrl: string;
  service: Service;
  /**
   * The host's session token for `email`, as `POST /login` mints it (null when it is not an email
   * address): what the demo seed acts with on the wire as that person.
   */
  sessionFor(email: string): string | null;
  /** Stops: turns in flight may finish for up to `graceMs` (default 0), then the server closes. */
  close(options?: { graceMs?: number }): Promise<void>;
}

export async function startExpressHost(options: ExpressHostOptions = {}): Promise<RunningHost> {
  const env = options.env ?? process.env;
  const signIn = createSignIn(options.sessionSecret ?? (env.HOST_SESSION_SECRET || undefined));

  // Listen first: the door's canonical URL is the host's, and the port may be picked now.
  // Requests that arrive before the service is composed wait for it (503 if composing fails).
  let handler: RequestListener | null = null;
  const early: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    if (handler) handler(req, res);
    else early.push(() => (handler ? handler(req, res) : res.writeHead(503).end()));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.hostname ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const baseUrl = (options.baseUrl ?? url).replace(/\/+$/, '');
  const door = demoDoor(signIn, {
    baseUrl,
    ...(options.serviceKey ? { serviceKey: options.serviceKey } : {}),
  });

  const reviewers = options.reviewers ?? reviewersFrom(env);
  const remixablesDir = options.remixablesDir ?? (env.HOST_REMIXABLES_DIR || undefined);

  const books = new OrderBooks();
  let service: Service;
  try {
    service = await createService({
      ...(options.store ? { store: options.store } : {}),
      principal: (request) => signIn.principal(request),
      model: options.model ?? createDemoModel(),
      system: 'You help the signed-in user with their orders.',
      tools: orderTools(books),
      // The orders page's slot and remixable components, the reviewers, and the apps page.
      apps: demoApps({
        baseUrl,
        reviewers,
        ...(options.seeds ? { seeds: options.seeds } : {}),
        ...(remixablesDir ? { sourceHashes: remixableHashes(remixablesDir) } : {}),
      }),
      mcp: { ...door.mcp },
      oauth: { ...door.oauth },
      actAs: door.actAs,
      ...(options.development !== undefined ? { development: options.development } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      env: { ...env, SERVICE_BASE_URL: baseUrl },
    });
  } catch (error) {
    for (const answer of early.splice(0)) answer();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  }

  // The host's own routes. The wire (and the door) is served beside them by `withService` below:
  // its requests are answered before Express sees them (`mountService(app, service)` works too).
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '16kb' }));
  app.use(signInRoutes(signIn, { origin: new URL(baseUrl).origin, productName: PRODUCT_NAME }));
  app.use(
    chatPageRoutes(signIn, books, {
      productName: PRODUCT_NAME,
      reviewers,
      ...(options.chatAssetsDir ? { assetsDir: options.chatAssetsDir } : {}),
    }),
  );
  // Last: a body the JSON parser refuses (or any other failure) answers JSON, never a stack page.
  app.use(jsonErrorHandler(options.logger ?? createJsonLogger()));
  handler = withService(app, service);
  for (const answer of early.splice(0)) answer();

  return {
    url,
    mcpUrl: `${baseUrl}/api/service/mcp`,
    service,
    sessionFor: (email) => signIn.tokenFor(email)?.token ?? null,
    close: async (options = {}) => {
      server.closeIdleConnections();
      await service.close(options);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
