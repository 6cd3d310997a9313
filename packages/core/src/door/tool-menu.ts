/**
 * The door's tool menu: every enabled tool whose audience is end-user (or unset), shortened by
 * `surfaces.mcp` in the overrides, with the service's own `service_*` tools never curated away.
 * Each listed tool carries MCP annotations derived from its risk label; an ungraded tool asserts
 * neither hint.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RegisteredTool, ToolRegistry } from '../agent/tools.js';
import type { Logger } from '../http/logger.js';
import type { DoorOverrides } from './config.js';

export interface DoorMenu {
  /** Listed tools, in registry order. */
  tools: readonly RegisteredTool[];
  /** The `tools/list` answer, computed once. */
  listed: Tool[];
  get(name: string): RegisteredTool | undefined;
}

/** Builds the menu once at composition; unknown or disabled `surfaces.mcp` entries warn once and are skipped. */
export function buildMenu(registry: ToolRegistry | null, overrides: DoorOverrides, logger: Logger): DoorMenu {
  const all = registry?.all() ?? [];
  let eligible = all.filter((tool) => tool.enabled && tool.audience !== 'internal');
  const curated = overrides.surfaces?.mcp;
  if (curated !== undefined) {
    const wanted = new Set<string>();
    for (const name of curated) {
      const tool = all.find((t) => t.name === name);
      if (!tool) {
        logger.warn('door.menu_entry_skipped', { tool: name, reason: 'no such tool' });
      } else if (!tool.enabled) {
        logger.warn('door.menu_entry_skipped', { tool: name, reason: 'disabled' });
      } else {
        wanted.add(name);
      }
    }
    eligible = eligible.filter((tool) => wanted.has(tool.name) || tool.name.startsWith('service_'));
  }
  const titled = eligible.map((tool) => {
    const title = overrides.tools?.[tool.name]?.title;
    return title ? { ...tool, title } : tool;
  });
  const byName = new Map(titled.map((tool) => [tool.name, tool]));
  return {
    tools: titled,
    listed: titled.map(listing),
    get: (name) => byName.get(name),
  };
}

/** MCP tool annotations of a risk label. @see MCP "Tools" §Tool Annotations */
export function annotationsFor(tool: Pick<RegisteredTool, 'risk' | 'title'>): Tool['annotations'] {
  switch (tool.risk) {
    case 'read':
      return { title: tool.title, readOnlyHint: true, destructiveHint: false };
    case 'write':
      return { title: tool.title, readOnlyHint: false, destructiveHint: false };
    case 'destructive':
      return { title: tool.title, readOnlyHint: false, destructiveHint: true };
    default:
      // Ungraded: asserting either hint would be a guess.
      return { title: tool.title };
  }
}

function listing(tool: RegisteredTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    annotations: annotationsFor(tool),
  };
}
