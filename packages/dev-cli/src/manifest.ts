import { SERVICE_EVENT_KINDS } from '@service/core/schemas';
import { isMap, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';

/**
 * The deploy manifest (`service.yaml`). Unknown keys are refused so a typo is never ignored.
 *
 * @see docs/cli.md "validate"
 */
export const MANIFEST_NAME_PATTERN = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const ENV_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;
const SLUG_PATTERN = /^[a-z][a-z0-9-]*[a-z0-9]$/;
export const RUNTIMES = ['python', 'node', 'go', 'rust', 'ruby', 'java', 'other'] as const;

const LIST = 'must be a list, such as [A, B]';
const MAPPING = 'must be a mapping of keys to values';

const envNames = z
  .array(z.string().regex(ENV_NAME_PATTERN, 'must be upper snake case (^[A-Z][A-Z0-9_]*$)'), LIST)
  .refine((names) => new Set(names).size === names.length, 'lists a variable twice');

export const manifestSchema = z.strictObject({
  name: z
    .string('must be a string')
    .regex(
      MANIFEST_NAME_PATTERN,
      `must match ${MANIFEST_NAME_PATTERN.source} (3-64 lowercase letters, digits, hyphens)`,
    ),
  version: z.literal(1, 'must be 1'),
  runtime: z.enum(RUNTIMES, `must be one of ${RUNTIMES.join(', ')}`),
  integrations: z
    .array(z.string().regex(SLUG_PATTERN, 'must be an integration slug such as llm-gateway'), LIST)
    .refine((slugs) => new Set(slugs).size === slugs.length, 'lists an integration twice')
    .optional(),
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
});
export type Manifest = z.infer<typeof manifestSchema>;

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
  const input = doc.toJS();
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
