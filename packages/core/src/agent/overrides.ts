/**
 * `.service/overrides.json`: the host's curation of where its tools appear, one schema for every
 * reader. `surfaces.agent` shortens the embedded agent's menu, `surfaces.mcp` the door's;
 * `tools.<name>.title` renames a tool in menus and approval cards. A name that is missing or
 * disabled warns once at boot and is skipped. The menu is curation, not permission. Other
 * members of the file belong to other readers and pass untouched.
 */
import { z } from 'zod';
import type { Logger } from '../http/logger.js';
import type { ToolRegistry } from './tools.js';

/** Longest title an override may give a tool (after trimming). */
export const OVERRIDE_TITLE_MAX = 120;

const toolNames = z.array(z.string().min(1).max(64)).max(500);

export const overridesSchema = z.looseObject({
  surfaces: z
    .strictObject(
      { agent: toolNames.optional(), mcp: toolNames.optional() },
      { error: 'surfaces accepts only agent and mcp' },
    )
    .optional(),
  tools: z
    .record(z.string(), z.object({ title: z.string().trim().min(1).max(OVERRIDE_TITLE_MAX).optional() }))
    .optional(),
});

export type Overrides = z.infer<typeof overridesSchema>;

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
