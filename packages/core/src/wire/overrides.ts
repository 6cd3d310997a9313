/**
 * `.service/overrides.json`: the host's curation of where its tools appear. `surfaces.agent`
 * shortens the embedded agent's menu, `surfaces.mcp` the door's; `tools.<name>.title` renames a
 * tool in menus and approval cards. A name that is missing or disabled warns once at boot and is
 * skipped. The menu is curation, not permission.
 *
 * @see platform-spec.md "MCP door endpoints" (door tool menu)
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { ToolRegistry } from '../agent/tools.js';
import type { Logger } from '../http/logger.js';
import { CompositionError } from './options.js';

const toolNames = z.array(z.string().min(1).max(64)).max(500);

export const overridesSchema = z.object({
  surfaces: z
    .strictObject(
      { agent: toolNames.optional(), mcp: toolNames.optional() },
      { error: 'surfaces accepts only agent and mcp' },
    )
    .optional(),
  tools: z.record(z.string(), z.object({ title: z.string().min(1).max(120).optional() })).optional(),
});

export type Overrides = z.infer<typeof overridesSchema>;

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
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'file'}: ${i.message}`).join('; ');
    throw new CompositionError(`${path}: ${problems}`);
  }
  return parsed.data;
}

/**
 * The names the embedded agent may offer, or null for every enabled tool. Names of missing or
 * disabled tools are dropped with one warning each.
 */
export function agentSurface(
  overrides: Overrides | undefined,
  tools: ToolRegistry,
  logger: Logger,
): Set<string> | null {
  const names = overrides?.surfaces?.agent;
  if (!names) return null;
  const kept = new Set<string>();
  for (const name of names) {
    const tool = tools.get(name);
    if (tool?.enabled) kept.add(name);
    else
      logger.warn('overrides: surfaces.agent names a tool that is missing or disabled; skipped', {
        tool: name,
      });
  }
  return kept;
}
