/**
 * The checks a document passes before it is saved, against this host: the Kit and the host's
 * tool catalog (`validateDocument`), then one real run of each of its queries through the host's
 * read tools, as the person (`checkAgainstRun`). A document refused by either is never saved.
 */

import { callHostTool, type HostToolDeps, toolErrorText } from '../../agent/tool-call.js';
import type { ToolContext, ToolRegistry } from '../../agent/tools.js';
import {
  type AppDocument,
  type AppToolCatalog,
  checkAgainstRun,
  type JsonSchema,
  kitCatalog,
  type Problem,
  validateDocument,
} from '../../apps/index.js';

export type DocumentCheck = { ok: true; document: AppDocument } | { ok: false; problems: Problem[] };

/** The host's enabled tools as the validator sees them: whether each only reads, and its output schema. */
export function appToolCatalog(tools: ToolRegistry): AppToolCatalog {
  const catalog: Record<string, { read: boolean; output?: JsonSchema }> = {};
  for (const tool of tools.enabled()) {
    catalog[tool.name] = {
      read: tool.risk === 'read',
      ...(tool.outputSchema ? { output: tool.outputSchema as JsonSchema } : {}),
    };
  }
  return catalog;
}

/**
 * What an app document may use on this host: the Kit's components with their props' schemas, and
 * the host's enabled tools (which may back a query, and what each returns). The agent reads it
 * through `service_apps_kit`; a replay's model gets it in its instructions.
 */
export function appKit(tools: ToolRegistry) {
  return {
    components: kitCatalog(),
    tools: tools.enabled().map((tool) => ({
      name: tool.name,
      description: tool.description,
      query: tool.risk === 'read',
      output: tool.outputSchema,
    })),
  };
}

export interface DocumentChecker {
  /** The schema checks only: no tool runs. */
  validate(raw: unknown): DocumentCheck;
  /** The schema checks, then one real run of each query as the person in `context`. */
  check(raw: unknown, context: ToolContext): Promise<DocumentCheck>;
}

/**
 * A checker over the host's tools. A query's tool runs through the same path as any host tool
 * call (input validation, grants, audit); a read tool that asks for approval without a grant
 * cannot back a query, since nobody is there to answer while a document is checked.
 */
export function documentChecker(tools: ToolRegistry, deps: HostToolDeps): DocumentChecker {
  const validate = (raw: unknown): DocumentCheck => validateDocument(raw, { tools: appToolCatalog(tools) });
  return {
    validate,
    async check(raw, context) {
      const checked = validate(raw);
      if (!checked.ok) return checked;
      const document = checked.document;
      const { results, problems } = await runQueries(tools, deps, document, context);
      if (problems.length > 0) return { ok: false, problems };
      const run = checkAgainstRun(document, results);
      return run.ok ? { ok: true, document } : run;
    },
  };
}

/** What running a document's queries gave: each query's output by name, and why the others failed. */
export interface QueryRuns {
  results: Record<string, unknown>;
  problems: Problem[];
}

/**
 * Runs each query of a checked document once, as the person in `context`, through the same path
 * as any host tool call; `attribution` is what the activity record says ran them. A query that
 * cannot run is a problem naming it, never a throw.
 */
export async function runQueries(
  tools: ToolRegistry,
  deps: HostToolDeps,
  document: AppDocument,
  context: ToolContext,
  attribution: Record<string, unknown> = { via: 'app-check' },
): Promise<QueryRuns> {
  const results: Record<string, unknown> = {};
  const problems: Problem[] = [];
  // A stored document passed the checks when saved; one saved with no queries has none to run.
  for (const [name, query] of Object.entries(document.queries ?? {})) {
    const ran = await runQuery(tools, deps, query.tool, query.input ?? {}, context, attribution);
    if (ran.ok) results[name] = ran.output;
    else problems.push({ path: `queries.${name}`, message: `query "${name}" (${query.tool}) ${ran.why}` });
  }
  return { results, problems };
}

async function runQuery(
  tools: ToolRegistry,
  deps: HostToolDeps,
  name: string,
  input: unknown,
  context: ToolContext,
  attribution: Record<string, unknown>,
): Promise<{ ok: true; output: unknown } | { ok: false; why: string }> {
  const tool = tools.get(name);
  if (!tool?.enabled) return { ok: false, why: 'names no host tool' };
  const { writeData: _painting, grant: _grant, ...callContext } = context;
  const outcome = await callHostTool(deps, {
    tool,
    input,
    owner: context.principal.subject,
    context: callContext,
    audit: { grantUsed: attribution, called: attribution },
    approve: async () => null,
  });
  switch (outcome.status) {
    case 'ok':
      return { ok: true, output: outcome.output };
    case 'invalid-input':
      return { ok: false, why: `refused its input: ${outcome.message}` };
    case 'approval-required':
      return { ok: false, why: 'needs an approval, so it cannot back a query' };
    case 'no-credentials':
      return { ok: false, why: 'could not get the host credentials to run' };
    case 'failed':
      return { ok: false, why: `failed when run: ${toolErrorText(outcome.error)}` };
  }
}
