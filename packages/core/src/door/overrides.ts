/**
 * The parts of `.service/overrides.json` the door reads: `surfaces.mcp` (the shorter menu) and
 * per-tool `title`s. The file's one schema is the agent's (`agent/overrides.ts`); other members
 * belong to other readers and pass untouched.
 */
import { overridesSchema } from '../agent/overrides.js';
import { describeIssues } from '../http/issues.js';
import type { DoorOverrides } from './config.js';
import { DoorConfigError } from './config-error.js';

/** Validates overrides given as parsed JSON; a malformed file is a composition error naming the problem. */
export function parseOverrides(value: unknown): DoorOverrides {
  if (value === undefined || value === null) return {};
  const parsed = overridesSchema.safeParse(value);
  if (!parsed.success) {
    throw new DoorConfigError(`.service/overrides.json: ${describeIssues(parsed.error, { limit: 1 })}`);
  }
  const { surfaces, tools } = parsed.data;
  return {
    ...(surfaces ? { surfaces } : {}),
    ...(tools ? { tools } : {}),
  };
}
