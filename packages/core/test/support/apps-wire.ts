/**
 * A real wire with apps, served by Express on loopback, for the suites of packages that talk to
 * it from the outside (the React package's slots): a fresh store, a service that signs a person in
 * by the `x-test-user` header, and the app store to make apps with directly (the routes that
 * build apps need the agent).
 */
import { serveWithExpress } from '../../../express/test/support/serve.js';
import type { AnyHostTool } from '../../src/agent/tools.js';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { AppsOptions } from '../../src/wire/options.js';
import { testService } from '../wire/support/wire.js';
import { openTestStore, type TestStore } from './stores.js';

export interface AppsWire {
  /** Where the wire is mounted: `http://127.0.0.1:<port>/api/service`. */
  baseUrl: string;
  /** A fetch that signs `user` in (the stand-in for the host's session cookie). */
  fetchAs(user: string | null): typeof fetch;
  /** Makes an app for `owner` with `document` as its one version; answers its id. */
  makeApp(owner: string, name: string, document: Record<string, unknown>): Promise<string>;
  /** The app store itself, for what no route of the wire makes (a review remix, its approval). */
  apps: AppStore;
  /**
   * Another wire on the same store, composed with other options: the host's next deploy (a
   * changed seed makes existing remixes drift). Closing it leaves this wire and the store alone.
   */
  recompose(options: WireOptions): Promise<AppsWire>;
  close(): Promise<void>;
}

interface WireOptions {
  tools?: AnyHostTool[];
  apps?: AppsOptions | false;
}

/**
 * `tools`: the host's tools, which the apps' queries and buttons call; `apps`: the composition's
 * apps options (seeds, reviewers), or `false` for a wire without apps.
 */
export async function startAppsWire(options: WireOptions = {}): Promise<AppsWire> {
  const store = await openTestStore('pglite');
  const wire = await serveOn(store, options, new AppStore(store.db));
  return {
    ...wire,
    async close() {
      await wire.close();
      await store.dispose();
    },
  };
}

/** A service composed with `options` on `store`, served by Express; closing it keeps the store. */
async function serveOn(store: TestStore, options: WireOptions, apps: AppStore): Promise<AppsWire> {
  const service = await testService(store, {
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.apps !== undefined ? { apps: options.apps } : {}),
  });
  const server = await serveWithExpress(service);
  let serial = 0;
  return {
    apps,
    baseUrl: `${server.url}/api/service`,
    fetchAs: (user) => (input, init) => {
      const headers = new Headers(init?.headers);
      if (user) headers.set('x-test-user', user);
      return fetch(input, { ...init, headers });
    },
    async makeApp(owner, name, document) {
      serial += 1;
      const app = await apps.createApp(owner, { name, document, contentHash: `sha256:test-${serial}` });
      return app.id;
    },
    recompose: (next) => serveOn(store, next, apps),
    async close() {
      await server.close();
      await service.close();
    },
  };
}
