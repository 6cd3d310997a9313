/**
 * The demo host: an Express app with its own sign-in, the service wire mounted at
 * `/api/service` (and the door's discovery handler at `/.well-known`), and a few host tools.
 *
 * @see docs/wire.md "Drive a turn with curl"
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { Logger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { createService, type Service } from '@service/core/wire';
import { withService } from '@service/express';
import express from 'express';
import { createDemoModel } from './demo-model.js';
import { createSignIn, SESSION_COOKIE } from './sign-in.js';
import { hostTools } from './tools.js';

export interface ExpressHostOptions {
  /** Port to listen on; 0 picks a free one. */
  port?: number;
  hostname?: string;
  /** The shared store (the platform's, under `pnpm start`). Default: `createStore()`. */
  store?: Store;
  /** Default: the offline demo model. */
  model?: LanguageModelV3;
  /** Default: `NODE_ENV !== 'production'`. */
  development?: boolean;
  /** Secret of the sign-in tokens. Default `HOST_SESSION_SECRET`, else random per process. */
  sessionSecret?: string;
  logger?: Logger;
  env?: Record<string, string | undefined>;
}

export interface RunningHost {
  /** `http://127.0.0.1:<port>` */
  url: string;
  service: Service;
  close(): Promise<void>;
}

export async function startExpressHost(options: ExpressHostOptions = {}): Promise<RunningHost> {
  const env = options.env ?? process.env;
  const signIn = createSignIn(options.sessionSecret ?? (env.HOST_SESSION_SECRET || undefined));
  const service = await createService({
    ...(options.store ? { store: options.store } : {}),
    principal: (request) => signIn.principal(request),
    model: options.model ?? createDemoModel(),
    system: 'You help the signed-in user with their orders.',
    tools: hostTools,
    ...(options.development !== undefined ? { development: options.development } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    env,
  });

  // The host's own routes. The wire is served beside them by `withService` below: its requests
  // are answered before Express sees them (`mountService(app, service)` works too, slower).
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '16kb' }));
  app.get('/', (_req, res) => {
    res.json({
      host: 'express-host demo',
      signIn: 'POST /login with {"email":"you@example.com"}',
      wire: '/api/service',
    });
  });
  app.post('/login', (req, res) => {
    const issued = typeof req.body?.email === 'string' ? signIn.tokenFor(req.body.email) : null;
    if (!issued) {
      res.status(400).json({ message: 'email must be an email address' });
      return;
    }
    res.cookie(SESSION_COOKIE, issued.token, { httpOnly: true, sameSite: 'lax', path: '/' });
    res.json(issued);
  });
  app.post('/logout', (_req, res) => {
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.json({ signedOut: true });
  });

  const server: Server = createServer(withService(app, service));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.hostname ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await service.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    service,
    close: async () => {
      server.closeIdleConnections();
      await service.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
