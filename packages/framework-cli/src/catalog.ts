/**
 * `.service/catalog.json`: the host's tools as sync extracted them, and how two catalogs differ.
 * A change is breaking when a saved reference (an app, an automation, a grant) or a caller written
 * against the old catalog can stop working: a tool removed or disabled, an input property
 * removed or retyped, a new required property.
 */
import type { JSONSchema7 } from 'ai';

export interface CatalogTool {
  name: string;
  title: string;
  description: string;
  risk: 'read' | 'write' | 'destructive' | null;
  audience: 'end-user' | 'internal';
  enabled: boolean;
  inputSchema: JSONSchema7;
}

export interface Catalog {
  version: 1;
  tools: CatalogTool[];
}

export interface CatalogChange {
  tool: string;
  kind: 'added' | 'removed' | 'changed';
  breaking: boolean;
  details: string[];
}

export function diffCatalogs(before: Catalog | null, after: Catalog): CatalogChange[] {
  if (!before) return [];
  const changes: CatalogChange[] = [];
  const old = new Map(before.tools.map((t) => [t.name, t]));
  const now = new Map(after.tools.map((t) => [t.name, t]));
  for (const tool of before.tools) {
    if (!now.has(tool.name))
      changes.push({ tool: tool.name, kind: 'removed', breaking: true, details: ['removed'] });
  }
  for (const tool of after.tools) {
    const prior = old.get(tool.name);
    if (!prior) {
      changes.push({ tool: tool.name, kind: 'added', breaking: false, details: ['added'] });
      continue;
    }
    const breaking: string[] = [];
    const other: string[] = [];
    if (prior.enabled && !tool.enabled) breaking.push('disabled');
    breaking.push(...inputBreaks(prior.inputSchema, tool.inputSchema));
    if (prior.risk !== tool.risk)
      other.push(`risk ${prior.risk ?? 'ungraded'} -> ${tool.risk ?? 'ungraded'}`);
    if (prior.description !== tool.description) other.push('description changed');
    if (prior.title !== tool.title) other.push('title changed');
    if (JSON.stringify(prior.inputSchema) !== JSON.stringify(tool.inputSchema) && breaking.length === 0) {
      other.push('input widened');
    }
    if (breaking.length + other.length > 0) {
      changes.push({
        tool: tool.name,
        kind: 'changed',
        breaking: breaking.length > 0,
        details: [...breaking, ...other],
      });
    }
  }
  return changes;
}

type Properties = Record<string, JSONSchema7>;

function inputBreaks(before: JSONSchema7, after: JSONSchema7): string[] {
  const oldProps = (before.properties ?? {}) as Properties;
  const newProps = (after.properties ?? {}) as Properties;
  const oldRequired = new Set(before.required ?? []);
  const breaks: string[] = [];
  for (const name of Object.keys(oldProps)) {
    const next = newProps[name];
    if (!next) breaks.push(`input.${name} removed`);
    else if (JSON.stringify(oldProps[name]?.type) !== JSON.stringify(next.type)) {
      breaks.push(`input.${name} type changed`);
    }
  }
  for (const name of after.required ?? []) {
    if (!oldRequired.has(name)) breaks.push(`input.${name} now required`);
  }
  return breaks;
}
