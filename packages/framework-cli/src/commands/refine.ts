/**
 * `service refine [dir]`: asks a model (the app's own, through the AI SDK; offline, the demo
 * model) for improvements to `.service/overrides.json` (tool titles, the agent's and the door's
 * menus), shows them as a unified diff and applies them only on `--yes` or a confirmation. Every
 * run leaves a transcript under `.service/data/refine/`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { parseArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { CONTEXT_END, CONTEXT_START } from '../demo-model.js';
import { unifiedDiff } from '../diff.js';
import {
  hostPackageDir,
  importHostModule,
  importHostPackage,
  isPackageSpecifier,
  resolveHostFile,
} from '../host-module.js';
import { type CliIo, confirm, interactive } from '../io.js';
import {
  appDir,
  appUrl,
  CATALOG_PATH,
  CONFIG_PATH,
  configuredAppUrl,
  OVERRIDES_PATH,
  readConfig,
  readOverrides,
  type ServiceConfig,
  safeJson,
  WIRE_PATH,
} from '../project.js';

const OPTIONS = { url: 'string', 'model-import': 'string', ask: 'strings', yes: 'boolean' } as const;

const TRANSCRIPTS = '.service/data/refine';

/** What the model may propose: the overrides members refine curates, nothing else. */
const proposalSchema = z.object({
  overrides: z
    .object({
      surfaces: z
        .strictObject({ agent: z.array(z.string()).optional(), mcp: z.array(z.string()).optional() })
        .optional(),
      tools: z
        .record(z.string(), z.object({ title: z.string().trim().min(1).max(120).optional() }))
        .optional(),
    })
    .default({}),
  notes: z.array(z.string()).default([]),
});

const SYSTEM = `You refine how a web app's tools are presented to its embedded agent and to outside agents over MCP.
You may propose only .service/overrides.json members: "tools" (per tool name, a short human "title")
and "surfaces" ("agent" and "mcp": the tool names each menu lists). Use only tool names of the catalog.
Answer with one JSON object and nothing else: {"overrides": {...}, "notes": ["why", ...]}.`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { options, positionals } = parseArgs('refine', args, OPTIONS, 1);
  const dir = appDir(io.cwd, positionals[0]);
  const config = readConfig(dir);
  const catalog = safeJson(readText(join(dir, CATALOG_PATH)) ?? '');
  if (!catalog) throw new CliError(`No ${CATALOG_PATH}: run \`service sync\` first.`);
  const existing = await readOverrides(dir);
  const overridesText = existing?.text;
  const overrides: Record<string, unknown> = existing?.overrides ?? {};
  const asks = (options.ask as string[] | undefined) ?? [];
  const notes: string[] = [];

  const { model, label } = await loadModel(dir, config, options['model-import'] as string | undefined, notes);
  let status: unknown = null;
  const url = configuredAppUrl(dir, io.env, options.url as string | undefined);
  if (url !== undefined) {
    const base = appUrl(dir, io.env, url);
    try {
      const response = await fetch(`${base}${WIRE_PATH}/status`, { signal: AbortSignal.timeout(10_000) });
      status = ((await response.json()) as { blocks?: unknown }).blocks ?? null;
    } catch (error) {
      notes.push(`No status from ${base}: ${(error as Error).message}`);
    }
  }

  const prompt = [
    `The app's brief: ${config.brief ?? '(none)'}`,
    asks.length > 0
      ? `The developer asks:\n${asks.map((a) => `- ${a}`).join('\n')}`
      : 'Propose what would help most.',
    CONTEXT_START + JSON.stringify({ catalog, overrides, asks, status }) + CONTEXT_END,
  ].join('\n\n');
  const { generateText } = await import('ai');
  const answer = await generateText({ model, system: SYSTEM, prompt });
  const proposal = proposalSchema.safeParse(safeJson(firstJsonObject(answer.text)));
  if (!proposal.success)
    throw new CliError(`The model's answer is not a proposal: ${answer.text.slice(0, 300)}`);
  notes.push(...proposal.data.notes);

  const next = merge(overrides, proposal.data.overrides);
  const before = overridesText ?? '';
  const after = `${JSON.stringify(next, null, 2)}\n`;
  const diff =
    before.trim() === '' && Object.keys(next).length === 0 ? '' : unifiedDiff(OVERRIDES_PATH, before, after);

  // Under --json stdout is one object at the end, so nothing is asked and only --yes applies.
  const say = (text: string) => {
    if (!io.json) io.stdout.write(text);
  };
  if (diff) say(diff);
  else say('Nothing to change.\n');
  for (const note of notes) say(`note: ${note}\n`);

  let applied = false;
  if (diff) {
    if (options.yes) applied = true;
    else if (!io.json && interactive(io)) applied = await confirm(io, `Apply to ${OVERRIDES_PATH}?`);
    else say('Not applied: pass --yes to apply.\n');
    if (applied) {
      mkdirSync(join(dir, '.service'), { recursive: true });
      writeFileSync(join(dir, OVERRIDES_PATH), after);
      say(`Applied to ${OVERRIDES_PATH}.\n`);
    }
  }
  const transcriptDir = join(dir, TRANSCRIPTS);
  mkdirSync(transcriptDir, { recursive: true });
  const at = new Date().toISOString();
  const transcript = join(transcriptDir, `${at.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    transcript,
    `${JSON.stringify({ at, model: label, asks, system: SYSTEM, prompt, answer: answer.text, diff, applied, notes }, null, 2)}\n`,
  );
  const transcriptPath = join(TRANSCRIPTS, transcript.slice(transcriptDir.length + 1));
  if (io.json) {
    io.stdout.write(
      `${JSON.stringify({ model: label, diff, applied, notes, transcript: transcriptPath })}\n`,
    );
  } else io.stdout.write(`Transcript: ${transcriptPath}\n`);
  return 0;
}

type Model = Parameters<typeof import('ai').generateText>[0]['model'];

/**
 * The app's model (`model` of the model module), else the offline demo model. The specifier reads
 * as the wiring's import of it does: a package of the app, a file relative to the service module,
 * or `@/…`. A module that is not there is an error naming where it was configured: only a module
 * that loads and exports no model hands over to the demo model.
 */
async function loadModel(
  dir: string,
  config: ServiceConfig,
  flag: string | undefined,
  notes: string[],
): Promise<{ model: Model; label: string }> {
  const specifier = flag ?? config.modelImport;
  const named =
    flag !== undefined ? `--model-import ${flag}` : `${specifier} (modelImport in ${CONFIG_PATH})`;
  let module: Record<string, unknown>;
  if (isPackageSpecifier(specifier)) {
    if (!hostPackageDir(dir, specifier)) {
      throw new CliError(`${named}: no such package in the app's node_modules: install it, or name another.`);
    }
    module = await importHostPackage(dir, specifier);
  } else {
    // The tools module init recorded lies beside the service module, whose import this reads as.
    const file = resolveHostFile(dir, specifier, join(dir, dirname(config.toolsModule)));
    if (!file) throw new CliError(`${named}: no such module in the app.`);
    module = await importHostModule(dir, file);
  }
  const model = (module.model ?? module.default) as Model | undefined;
  if (model) {
    const label = typeof model === 'string' ? model : `${model.provider}/${model.modelId}`;
    return { model, label };
  }
  notes.push(`${specifier} exports no model: the offline demo model answered.`);
  const { createRefineDemoModel } = await import('../demo-model.js');
  return { model: createRefineDemoModel(), label: 'demo/refine-offline' };
}

function merge(current: Record<string, unknown>, proposal: z.infer<typeof proposalSchema>['overrides']) {
  const next: Record<string, unknown> = { ...current };
  if (proposal.tools && Object.keys(proposal.tools).length > 0) {
    next.tools = { ...((current.tools as Record<string, unknown> | undefined) ?? {}), ...proposal.tools };
  }
  if (proposal.surfaces) {
    next.surfaces = {
      ...((current.surfaces as Record<string, unknown> | undefined) ?? {}),
      ...proposal.surfaces,
    };
  }
  return next;
}

function firstJsonObject(text: string): string {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  return start === -1 || end < start ? '' : text.slice(start, end + 1);
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
