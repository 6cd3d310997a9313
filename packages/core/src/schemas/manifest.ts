import { isMap, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { SERVICE_EVENT_KINDS } from './events.js';

/**
 * The deploy manifest (`service.yaml`): what the developer CLI's `service validate` checks and
 * what a tool release is published from. Unknown keys are refused so a typo is never ignored.
 *
 * @see docs/cli.md "The manifest"
 */
export const MANIFEST_NAME_PATTERN = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const ENV_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;
const SLUG_PATTERN = /^[a-z][a-z0-9-]*[a-z0-9]$/;
export const RUNTIMES = ['python', 'node', 'go', 'rust', 'ruby', 'java', 'other'] as const;
/** The kinds of value a deploy wizard input asks for. */
export const WIZARD_INPUT_TYPES = ['text', 'secret', 'number', 'boolean', 'url'] as const;

const LIST = 'must be a list, such as [A, B]';
const MAPPING = 'must be a mapping of keys to values';

const envNames = z
  .array(z.string().regex(ENV_NAME_PATTERN, 'must be upper snake case (^[A-Z][A-Z0-9_]*$)'), LIST)
  .refine((names) => new Set(names).size === names.length, 'lists a variable twice');

const integrationSlugs = z
  .array(z.string().regex(SLUG_PATTERN, 'must be an integration slug such as llm-gateway'), LIST)
  .max(50, 'lists at most 50 integrations')
  .refine((slugs) => new Set(slugs).size === slugs.length, 'lists an integration twice');

const text = (max: number) =>
  z
    .string('must be a string')
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const stepId = z
  .string('must be a string')
  .regex(SLUG_PATTERN, 'must be lowercase letters, digits and hyphens');

/** A section of a wizard step: integrations to connect, or inputs to fill in. */
const wizardSectionSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('integration'), providers: integrationSlugs }, MAPPING),
    z.strictObject(
      {
        type: z.literal('inputs'),
        keys: z.array(z.string('must be a string'), LIST).min(1, 'must not be empty'),
      },
      MAPPING,
    ),
  ],
  'must have type integration (with providers) or inputs (with keys)',
);

const wizardSchema = z.strictObject(
  {
    inputs: z
      .array(
        z.strictObject(
          {
            key: z
              .string('must be a string')
              .regex(ENV_NAME_PATTERN, 'must be upper snake case (^[A-Z][A-Z0-9_]*$)'),
            label: text(120),
            type: z.enum(WIZARD_INPUT_TYPES, `must be one of ${WIZARD_INPUT_TYPES.join(', ')}`),
            required: z.boolean('must be true or false').default(false),
          },
          MAPPING,
        ),
        LIST,
      )
      .max(50, 'lists at most 50 inputs')
      .default([]),
    steps: z
      .array(
        z.strictObject(
          {
            id: stepId,
            title: text(120),
            sections: z.array(wizardSectionSchema, LIST).min(1, 'must not be empty').max(20),
          },
          MAPPING,
        ),
        LIST,
      )
      .max(20, 'lists at most 20 steps')
      .optional(),
  },
  MAPPING,
);

export const manifestSchema = z
  .strictObject({
    name: z
      .string('must be a string')
      .regex(
        MANIFEST_NAME_PATTERN,
        `must match ${MANIFEST_NAME_PATTERN.source} (3-64 lowercase letters, digits, hyphens)`,
      ),
    version: z.literal(1, 'must be 1'),
    runtime: z.enum(RUNTIMES, `must be one of ${RUNTIMES.join(', ')}`),
    title: text(120).optional(),
    description: text(1000).optional(),
    category: text(60).optional(),
    integrations: integrationSlugs.optional(),
    optional_integrations: integrationSlugs.optional(),
    restart_on: z
      .array(
        z.enum(
          SERVICE_EVENT_KINDS as [string, ...string[]],
          `must be an event kind: ${SERVICE_EVENT_KINDS.join(', ')}`,
        ),
        LIST,
      )
      .optional(),
    env: z
      .strictObject({ required: envNames.optional(), optional: envNames.optional() }, MAPPING)
      .superRefine((env, ctx) => {
        (env.optional ?? []).forEach((name, index) => {
          if (env.required?.includes(name)) {
            ctx.addIssue({ code: 'custom', path: ['optional', index], message: `${name} is also required` });
          }
        });
      })
      .optional(),
    health: z
      .strictObject(
        {
          path: z.string().startsWith('/', 'must start with /').default('/healthz'),
          port: z
            .number('must be a number')
            .int('must be an integer')
            .min(1, 'must be 1-65535')
            .max(65_535, 'must be 1-65535')
            .optional(),
        },
        MAPPING,
      )
      .optional(),
    wizard: wizardSchema.optional(),
  })
  .superRefine(crossCheck, { when: () => true });
export type Manifest = z.infer<typeof manifestSchema>;

/**
 * What one key alone cannot say: references between the integration lists and the wizard. Run
 * even when other parts of the manifest are malformed (so `service validate` lists every
 * problem at once), it reads what it is given defensively: a part that is not the right shape is
 * the structural check's to report, and is skipped here.
 */
function crossCheck(value: unknown, ctx: z.RefinementCtx): void {
  const manifest = recordOf(value);
  const required = stringsOf(manifest.integrations);
  stringsOf(manifest.optional_integrations).forEach((slug, index) => {
    if (slug !== undefined && required.includes(slug)) {
      ctx.addIssue({
        code: 'custom',
        path: ['optional_integrations', index],
        message: `${slug} is also required`,
      });
    }
  });
  if (manifest.wizard === undefined) return;
  const wizard = recordOf(manifest.wizard);
  const declared = new Set([...required, ...stringsOf(manifest.optional_integrations)]);
  const inputKeys = new Set<string | undefined>();
  listOf(wizard.inputs).forEach((input, index) => {
    const key = recordOf(input).key;
    if (typeof key !== 'string') return;
    if (inputKeys.has(key)) {
      ctx.addIssue({
        code: 'custom',
        path: ['wizard', 'inputs', index, 'key'],
        message: `${key} is listed twice`,
      });
    }
    inputKeys.add(key);
  });
  const stepIds = new Set<string>();
  listOf(wizard.steps).forEach((entry, stepIndex) => {
    const step = recordOf(entry);
    const at = ['wizard', 'steps', stepIndex];
    if (typeof step.id === 'string') {
      if (stepIds.has(step.id))
        ctx.addIssue({ code: 'custom', path: [...at, 'id'], message: `${step.id} is used twice` });
      stepIds.add(step.id);
    }
    listOf(step.sections).forEach((entry, sectionIndex) => {
      const section = recordOf(entry);
      if (section.type !== 'integration' && section.type !== 'inputs') return;
      const integration = section.type === 'integration';
      const field = integration ? 'providers' : 'keys';
      const known = integration ? declared : inputKeys;
      const where = integration ? 'integrations or optional_integrations' : 'wizard.inputs';
      stringsOf(section[field]).forEach((name, nameIndex) => {
        if (name !== undefined && !known.has(name)) {
          ctx.addIssue({
            code: 'custom',
            path: [...at, 'sections', sectionIndex, field, nameIndex],
            message: `${name} is not in ${where}`,
          });
        }
      });
    });
  });
}

function recordOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A list's strings at their positions (anything else as undefined, so indexes stay true). */
function stringsOf(value: unknown): Array<string | undefined> {
  return listOf(value).map((item) => (typeof item === 'string' ? item : undefined));
}

/**
 * The deploy wizard's layout (version 1), as the catalog hands it out. Checked again on every read:
 * a stored layout that fails reads as null and the wizard falls back to a single page.
 */
export const wizardLayoutSchema = z.object({
  version: z.literal(1),
  subSteps: z
    .array(
      z.object({
        id: z.string().min(1),
        title: z.string(),
        sections: z.array(
          z.discriminatedUnion('type', [
            z.object({ type: z.literal('integration'), providers: z.array(z.string()) }),
            z.object({ type: z.literal('inputs'), keys: z.array(z.string()) }),
          ]),
        ),
      }),
    )
    .min(1),
});
export type WizardLayout = z.infer<typeof wizardLayoutSchema>;

/** The layout of a manifest's `wizard.steps`; null when it has none. */
export function wizardLayoutOf(manifest: Manifest): WizardLayout | null {
  const steps = manifest.wizard?.steps;
  if (!steps || steps.length === 0) return null;
  return { version: 1, subSteps: steps.map(({ id, title, sections }) => ({ id, title, sections })) };
}

/** A stored layout as the catalog may hand it out, or null when it does not pass the schema. */
export function readWizardLayout(stored: unknown): WizardLayout | null {
  const parsed = wizardLayoutSchema.safeParse(typeof stored === 'string' ? safeJson(stored) : stored);
  return parsed.success ? parsed.data : null;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface ManifestProblem {
  /** Dotted path with indexes, e.g. `env.required[1]`; empty for the whole document. */
  path: string;
  message: string;
  line?: number;
  column?: number;
}

export type ManifestResult = { ok: true; manifest: Manifest } | { ok: false; problems: ManifestProblem[] };

/** Parses and checks a manifest, listing every problem with its path and position. */
export function checkManifest(source: string): ManifestResult {
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((error) => {
        const at = lines.linePos(error.pos[0]);
        return { path: '', message: `YAML: ${error.message.split('\n')[0]}`, line: at.line, column: at.col };
      }),
    };
  }
  if (!isMap(doc.contents)) {
    return {
      ok: false,
      problems: [{ path: '', message: MAPPING, line: 1, column: 1 }],
    };
  }
  let input: unknown;
  try {
    input = doc.toJS();
  } catch (error) {
    // Aliases that expand past the library's limit (a "billion laughs" document) are refused,
    // not expanded.
    return {
      ok: false,
      problems: [
        { path: '', message: `YAML: ${(error as Error).message.split('\n')[0]}`, line: 1, column: 1 },
      ],
    };
  }
  const parsed = manifestSchema.safeParse(input);
  if (parsed.success) return { ok: true, manifest: parsed.data };

  const problems: ManifestProblem[] = [];
  for (const issue of parsed.error.issues) {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    for (const key of keys) {
      const path = key === undefined ? issue.path : [...issue.path, key];
      const message =
        key !== undefined
          ? 'unknown key'
          : valueAt(input, path) === undefined
            ? 'is required'
            : issue.message;
      const node = doc.getIn(path as Array<string | number>, true) as
        | { range?: [number, number] }
        | undefined;
      const keyNode =
        key !== undefined ? findKeyNode(doc, issue.path as Array<string | number>, key) : undefined;
      const offset = keyNode?.range?.[0] ?? node?.range?.[0];
      const at = offset !== undefined ? lines.linePos(offset) : undefined;
      problems.push({
        path: formatPath(path as Array<string | number>),
        message,
        ...(at ? { line: at.line, column: at.col } : {}),
      });
    }
  }
  // In reading order; problems without a position (missing keys) first.
  problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
  return { ok: false, problems };
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let value = root;
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

/** `env.required[1]` */
export function formatPath(path: Array<string | number | symbol>): string {
  return path.reduce<string>((out, part) => {
    if (typeof part === 'number') return `${out}[${part}]`;
    return out ? `${out}.${String(part)}` : String(part);
  }, '');
}

function findKeyNode(doc: ReturnType<typeof parseDocument>, parent: Array<string | number>, key: string) {
  const map = parent.length === 0 ? doc.contents : doc.getIn(parent, true);
  if (!isMap(map)) return undefined;
  const pair = map.items.find((item) => (item.key as { value?: unknown })?.value === key);
  return pair?.key as { range?: [number, number] } | undefined;
}
