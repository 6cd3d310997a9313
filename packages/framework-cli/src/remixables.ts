/**
 * `.service/remixables.json`: the baselines of the host's `<Remixable>` wrappers as the last
 * successful sync captured them. A hash that changes here tells the developer which wrapped
 * component changed since the last sync, so they update its seed (`apps.seeds`): the seed's
 * document is the baseline people's remixes are forked from, and changing it is what makes those
 * remixes report drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isObject, safeJson } from './project.js';
import type { Baseline, Capture, CaptureProblem } from './remixable-capture.js';

export const REMIXABLES_PATH = '.service/remixables.json';

export interface RemixablesFile {
  version: 1;
  remixables: Record<string, Baseline>;
}

export interface RemixableChange {
  id: string;
  file: string;
  line: number;
  previousHash: string;
  hash: string;
}

export interface RemixablesReport {
  /** The ids captured this run, sorted. */
  captured: string[];
  /** Captured ids whose hash differs from the previous file. */
  changed: RemixableChange[];
  /** Ids of the previous file whose wrapper is gone: pruned. */
  removed: string[];
  /** Wrappers that could not be captured: sync exits 2. */
  problems: CaptureProblem[];
}

/** The previous baselines; a missing or unreadable file is none. */
export function readRemixables(dir: string): Record<string, Baseline> {
  let parsed: Partial<RemixablesFile> | undefined;
  try {
    parsed = safeJson(readFileSync(join(dir, REMIXABLES_PATH), 'utf8')) as typeof parsed;
  } catch {
    return {};
  }
  const remixables = parsed?.remixables;
  return isObject(remixables) ? (remixables as Record<string, Baseline>) : {};
}

export function remixablesFile(capture: Capture): RemixablesFile {
  return { version: 1, remixables: capture.baselines };
}

export function diffRemixables(previous: Record<string, Baseline>, capture: Capture): RemixablesReport {
  const current = capture.baselines;
  const changed: RemixableChange[] = [];
  for (const [id, baseline] of Object.entries(current)) {
    const before = previous[id];
    if (before && typeof before.hash === 'string' && before.hash !== baseline.hash) {
      changed.push({
        id,
        file: baseline.file,
        line: baseline.line,
        previousHash: before.hash,
        hash: baseline.hash,
      });
    }
  }
  // An id whose wrapper failed to capture this run is not "removed": its problem says what is wrong.
  const unresolved = new Set(capture.problems.map((p) => p.id));
  const removed = Object.keys(previous)
    .filter((id) => !Object.hasOwn(current, id) && !unresolved.has(id))
    .sort();
  return { captured: Object.keys(current), changed, removed, problems: capture.problems };
}
