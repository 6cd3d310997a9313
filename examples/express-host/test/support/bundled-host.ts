/**
 * The browser walks' set-up: the chat UI bundled fresh into a temp folder, an in-memory store, and
 * the demo host serving that bundle over it. `start` starts the host again on the same store and
 * bundle (a test restarting it as the host's next deploy); `close` stops it and removes both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { bundleChatUi } from '@service/example-chat-ui/bundle';
import { openMemoryStore } from '../../../../packages/core/test/support/stores.js';
import { type ExpressHostOptions, type RunningHost, startExpressHost } from '../../src/host.js';

export interface BundledHost {
  store: Store;
  /** The host started last. */
  host: RunningHost;
  /** Stops the running host and starts another on the same store and bundle. */
  restart(options?: Partial<ExpressHostOptions>): Promise<RunningHost>;
  close(): Promise<void>;
}

export async function bundledHost(
  prefix: string,
  options: Partial<ExpressHostOptions> = {},
): Promise<BundledHost> {
  const assetsDir = mkdtempSync(join(tmpdir(), prefix));
  await bundleChatUi(assetsDir);
  const store = await openMemoryStore();
  const start = (more: Partial<ExpressHostOptions>) =>
    startExpressHost({ store, logger: silentLogger, env: {}, chatAssetsDir: assetsDir, ...more });
  const bundled: BundledHost = {
    store,
    host: await start(options),
    async restart(more = {}) {
      await bundled.host.close();
      bundled.host = await start(more);
      return bundled.host;
    },
    async close() {
      await bundled.host.close();
      await store.close();
      rmSync(assetsDir, { recursive: true, force: true });
    },
  };
  return bundled;
}
