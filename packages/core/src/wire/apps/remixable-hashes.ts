/**
 * The source hashes `service sync` captured for the host's `<Remixable>` wrappers, read from
 * `.service/remixables.json`, by component id: what a seed's `sourceHash` takes, so that changing
 * a wrapped component and syncing again makes its remixes drift.
 *
 * @see docs/wire.md "Seeds"
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompositionError } from '../options.js';

export const REMIXABLES_FILE = '.service/remixables.json';

/**
 * `{ [component]: hash }` from `<dir>/.service/remixables.json` (`dir` defaults to the working
 * directory). No file yet (never synced) is no hashes; a file that is not what sync writes is a
 * `CompositionError`, since seeds built on it would drift at random.
 */
export function remixableHashes(dir: string = process.cwd()): Record<string, string> {
  const path = join(dir, REMIXABLES_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CompositionError(`${path} is not JSON: run service sync to write it again`);
  }
  const remixables = (parsed as { remixables?: unknown } | null)?.remixables;
  if (!remixables || typeof remixables !== 'object' || Array.isArray(remixables)) {
    throw new CompositionError(`${path} has no remixables object: run service sync to write it again`);
  }
  const hashes: Record<string, string> = {};
  for (const [id, baseline] of Object.entries(remixables)) {
    const hash = (baseline as { hash?: unknown } | null)?.hash;
    if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) {
      throw new CompositionError(`${path}: remixable ${JSON.stringify(id)} has no sha256 hash`);
    }
    hashes[id] = hash;
  }
  return hashes;
}
