import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Hono } from 'hono';
import type { PlatformEnv } from '../context.js';

/** The dashboard's browser files, built by `@service/dashboard` (its script bundles the chart library). */
const ASSETS = {
  'dashboard.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
} as const;
type AssetName = keyof typeof ASSETS;

interface Asset {
  bytes: Buffer;
  etag: string;
}

let loaded: Map<AssetName, Asset> | null = null;

/** Reads the built files once; a missing build serves nothing (pages still work without script). */
function assets(): Map<AssetName, Asset> {
  if (loaded) return loaded;
  loaded = new Map();
  let dir: string | null = null;
  try {
    dir = join(dirname(createRequire(import.meta.url).resolve('@service/dashboard/package.json')), 'dist');
  } catch {
    dir = null;
  }
  for (const name of Object.keys(ASSETS) as AssetName[]) {
    if (!dir) break;
    try {
      const bytes = readFileSync(join(dir, name));
      loaded.set(name, {
        bytes,
        etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 16)}"`,
      });
    } catch {
      // Not built: `pnpm build` (or `pnpm start`, which builds) writes them.
    }
  }
  return loaded;
}

/** A version of the built files for the pages' asset URLs, so a new build is fetched at once. */
export function assetVersion(): string {
  const all = [...assets().values()].map((asset) => asset.etag).join('');
  return createHash('sha256').update(all).digest('base64url').slice(0, 10);
}

/** `/static/dashboard/{dashboard.js,dashboard.css}`: long-cached, since their URLs carry the version. */
export function assetRoutes(): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  app.get('/static/dashboard/:file', (c) => {
    const name = c.req.param('file');
    const asset = Object.hasOwn(ASSETS, name) ? assets().get(name as AssetName) : undefined;
    if (!asset) return c.json({ message: 'Not found' }, 404);
    const common = {
      etag: asset.etag,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    };
    if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, common);
    return c.body(new Uint8Array(asset.bytes), 200, { ...common, 'content-type': ASSETS[name as AssetName] });
  });
  return app;
}
