/**
 * Reading `.service/overrides.json` at composition (the schema and what it means are the
 * agent's: `agent/overrides.ts`). A file that is not JSON or does not match fails the
 * composition with a message naming every problem.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Overrides, overridesSchema } from '../agent/overrides.js';
import { describeIssues } from '../http/issues.js';
import { CompositionError } from './options.js';

/** Reads and checks the overrides file (`SERVICE_OVERRIDES_PATH`, default `.service/overrides.json`). */
export function readOverrides(env: Record<string, string | undefined>): Overrides | undefined {
  const path = resolve(env.SERVICE_OVERRIDES_PATH || '.service/overrides.json');
  if (!existsSync(path)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CompositionError(`${path} is not valid JSON: fix or remove it`, { cause: error });
  }
  const parsed = overridesSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CompositionError(`${path}: ${describeIssues(parsed.error, { emptyPath: 'file' })}`);
  }
  return parsed.data;
}
