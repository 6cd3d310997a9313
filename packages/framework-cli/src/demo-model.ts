/**
 * An offline stand-in for a real model, so `service refine` works with no network and no key:
 * it reads the catalog and overrides refine sends and answers as a model would, with JSON:
 * a readable title for every tool whose title is still its name, and, for an ask that says
 * "hide <tool>", a door menu (`surfaces.mcp`) without that tool.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';

export const CONTEXT_START = '<refine-context>';
export const CONTEXT_END = '</refine-context>';

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 0, text: 0, reasoning: undefined },
};

interface Context {
  catalog: { tools: Array<{ name: string; title: string; enabled: boolean; audience: string }> };
  overrides: { surfaces?: { mcp?: string[] }; tools?: Record<string, { title?: string }> };
  asks: string[];
}

export function createRefineDemoModel(): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId: 'refine-offline',
    supportedUrls: {},
    doGenerate: async (options) => ({
      content: [{ type: 'text', text: JSON.stringify(propose(contextOf(options))) }],
      finishReason: { unified: 'stop', raw: undefined },
      usage,
      warnings: [],
    }),
    doStream: async () => {
      throw new Error('The refine demo model does not stream.');
    },
  };
}

function contextOf(options: LanguageModelV3CallOptions): Context {
  const text = options.prompt
    .filter((m) => m.role === 'user')
    .flatMap((m) => m.content.map((p) => (p.type === 'text' ? p.text : '')))
    .join('\n');
  const start = text.indexOf(CONTEXT_START);
  const end = text.indexOf(CONTEXT_END);
  return JSON.parse(text.slice(start + CONTEXT_START.length, end)) as Context;
}

function propose(context: Context): { overrides: Context['overrides']; notes: string[] } {
  const tools: Record<string, { title: string }> = {};
  const notes: string[] = [];
  for (const tool of context.catalog.tools) {
    if (tool.title === tool.name && !context.overrides.tools?.[tool.name]?.title) {
      tools[tool.name] = { title: readable(tool.name) };
    }
  }
  const overrides: Context['overrides'] = Object.keys(tools).length > 0 ? { tools } : {};
  for (const ask of context.asks) {
    const hide = /\bhide\s+([A-Za-z][A-Za-z0-9_-]*)/i.exec(ask)?.[1];
    const known = context.catalog.tools.find((t) => t.name === hide);
    if (hide && known) {
      const menu =
        context.overrides.surfaces?.mcp ?? context.catalog.tools.filter((t) => t.enabled).map((t) => t.name);
      overrides.surfaces = { mcp: menu.filter((name) => name !== hide) };
      notes.push(`${hide} leaves the door's menu (the embedded agent keeps it).`);
    } else notes.push(`The offline demo model cannot act on: ${ask}`);
  }
  return { overrides, notes };
}

/** `list_orders` -> `List orders`. */
function readable(name: string): string {
  const words = name
    .replace(/[_-]+/g, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
