/**
 * The built chat page as a host serves it: `dist/manifest.json` names the bundle's files (their
 * names carry a hash of their content, so they can be cached forever), and the files themselves.
 * Node only: hosts read this, browsers never load it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where `pnpm --filter @service/example-chat-ui build` writes the page. */
export const CHAT_UI_DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

export const MANIFEST_FILE = 'manifest.json';

export interface ChatAssetManifest {
  /** The script to load as a module (`chat-<hash>.js`). */
  script: string;
  /** Its stylesheet (`chat-<hash>.css`). */
  stylesheet: string;
}

export interface ChatAsset {
  body: Buffer;
  contentType: string;
}

export interface ChatAssets {
  manifest: ChatAssetManifest;
  /** Every file of the page by its name; nothing else in the folder is served. */
  files: ReadonlyMap<string, ChatAsset>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The page built in `dir`, or null when it has not been built there. */
export function readChatAssets(dir: string = CHAT_UI_DIST): ChatAssets | null {
  const manifestPath = join(dir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) return null;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as ChatAssetManifest;
  const files = new Map<string, ChatAsset>();
  for (const name of [manifest.script, manifest.stylesheet]) {
    const type = CONTENT_TYPES[name.slice(name.lastIndexOf('.'))];
    if (!type || !/^[\w.-]+$/.test(name))
      throw new Error(`${manifestPath} names an unexpected file: ${name}`);
    files.set(name, { body: readFileSync(join(dir, name)), contentType: type });
  }
  return { manifest, files };
}
