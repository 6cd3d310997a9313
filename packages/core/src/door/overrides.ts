/**
 * The parts of `.service/overrides.json` the door reads: `surfaces.mcp` (the shorter menu) and
 * per-tool `title`s. Other members belong to other readers and pass untouched.
 *
 * @see platform-spec.md "MCP door endpoints" (Door tool menu)
 */
import { z } from 'zod';
import type { DoorOverrides } from './config.js';
import { DoorConfigError } from './config-error.js';

const overridesSchema = z.looseObject({
  surfaces: z
    .strictObject(
      { agent: z.array(z.string()).optional(), mcp: z.array(z.string()).optional() },
      { error: 'surfaces accepts only agent and mcp' },
    )
    .optional(),
  tools: z
    .record(z.string(), z.looseObject({ title: z.string().trim().min(1).max(200).optional() }))
    .optional(),
});

/** Validates overrides given as parsed JSON; a malformed file is a composition error naming the problem. */
export function parseOverrides(value: unknown): DoorOverrides {
  if (value === undefined || value === null) return {};
  const parsed = overridesSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    throw new DoorConfigError(`.service/overrides.json: ${where}${issue?.message ?? 'invalid'}`);
  }
  const { surfaces, tools } = parsed.data;
  return {
    ...(surfaces ? { surfaces } : {}),
    ...(tools
      ? {
          tools: Object.fromEntries(
            Object.entries(tools).map(([name, entry]) => [name, entry.title ? { title: entry.title } : {}]),
          ),
        }
      : {}),
  };
}
