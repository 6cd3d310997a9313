/**
 * The Kit: the components an app document may use, each with the zod schema of its props. A prop
 * schema describes the value the component renders; whether that value is written literally or
 * bound to a query or state is the validator's concern, not the schema's.
 */
import { z } from 'zod';
import { binding, jsonLiteral } from './document.js';
import { APP_DOCUMENT_LIMITS, NAME_PATTERN } from './limits.js';
import { parsePath } from './path.js';

/** A path to a field of one row (`customer.name`), for lists, tables and charts. */
const fieldPath = z
  .string()
  .min(1)
  .max(APP_DOCUMENT_LIMITS.maxPathLength)
  .refine((path) => parsePath(path).ok, 'a field path is fields joined by dots, list positions as [n]')
  .describe('a field of each row, like "customer.name"');

const gap = z.number().int().min(0).max(64).describe('space between children, in pixels');
const tone = z.enum(['neutral', 'info', 'success', 'warning', 'danger']);
const rowsOf = (what: string) =>
  z.array(jsonLiteral).max(1000).describe(`the ${what}: a list of objects, usually bound to a query`);

const toolAction = z
  .strictObject({
    type: z.literal('tool'),
    tool: z.string().min(1).max(128).describe("the host tool to call, guarded like the agent's own calls"),
    input: z
      .record(z.string(), z.union([binding, jsonLiteral]))
      .optional()
      .describe('the tool input: each field a literal or a binding'),
  })
  .describe('call a host tool');
const setStateAction = z
  .strictObject({
    type: z.literal('setState'),
    key: z.string().regex(NAME_PATTERN),
    value: jsonLiteral,
  })
  .describe('set a key of local state');
export const buttonAction = z.discriminatedUnion('type', [toolAction, setStateAction], {
  error: 'an action is { type: "tool", tool, input? } or { type: "setState", key, value }',
});
export type ButtonAction = z.infer<typeof buttonAction>;

const tableColumn = z.strictObject({
  field: fieldPath,
  label: z.string().max(80),
  format: z.enum(['text', 'number', 'money', 'date', 'badge']).optional(),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/)
    .optional()
    .describe('ISO 4217 code for money columns, like "USD"'),
});

/** Field paths a component reads from each row of one of its list props. */
export interface RowFields {
  /** The prop holding the rows. */
  rows: string;
  /** Each field path with where it is written (`columns[1].field`), read from the checked props. */
  fields(props: Record<string, unknown>): { at: string; field: string }[];
}

export interface KitComponent {
  name: string;
  summary: string;
  /** Whether the node may have children. */
  children: boolean;
  props: z.ZodObject;
  /**
   * Props that must be written literally: what a button calls and which fields a table shows are
   * decided when the document is checked, never by data that arrives later.
   */
  literalOnly?: readonly string[];
  rowFields?: RowFields;
}

const fieldsAt = (props: Record<string, unknown>, keys: string[]) =>
  keys.flatMap((key) => {
    const value = props[key];
    if (typeof value === 'string') return [{ at: key, field: value }];
    if (Array.isArray(value)) return value.map((field, i) => ({ at: `${key}[${i}]`, field: String(field) }));
    return [];
  });

const component = (definition: KitComponent) => definition;

export const KIT: readonly KitComponent[] = [
  component({
    name: 'Stack',
    summary: 'Children one under another.',
    children: true,
    props: z.strictObject({
      gap: gap.optional(),
      align: z.enum(['start', 'center', 'end', 'stretch']).optional(),
    }),
  }),
  component({
    name: 'Row',
    summary: 'Children side by side; wraps when narrow.',
    children: true,
    props: z.strictObject({
      gap: gap.optional(),
      align: z.enum(['start', 'center', 'end', 'stretch']).optional(),
      justify: z.enum(['start', 'center', 'end', 'between']).optional(),
    }),
  }),
  component({
    name: 'Card',
    summary: 'A bordered block with an optional title around its children.',
    children: true,
    props: z.strictObject({ title: z.string().max(120).optional() }),
  }),
  component({
    name: 'Heading',
    summary: 'A title line.',
    children: false,
    props: z.strictObject({
      text: z.string().max(200),
      level: z.union([z.literal(1), z.literal(2), z.literal(3)]).optional(),
    }),
  }),
  component({
    name: 'Text',
    summary: 'A paragraph of text; a number is shown as written.',
    children: false,
    props: z.strictObject({
      text: z.union([z.string().max(4000), z.number()]),
      tone: z.enum(['default', 'muted', 'success', 'warning', 'danger']).optional(),
    }),
  }),
  component({
    name: 'Stat',
    summary: 'One figure with its label, and an optional change.',
    children: false,
    props: z.strictObject({
      label: z.string().max(80),
      value: z.union([z.number(), z.string().max(80)]),
      unit: z.string().max(16).optional(),
      delta: z.number().optional().describe('change since the last period; its sign picks the colour'),
    }),
  }),
  component({
    name: 'Money',
    summary: 'An amount of money in a currency, formatted for the reader.',
    children: false,
    props: z.strictObject({
      amount: z.number().describe('the amount, counted in `unit`'),
      currency: z.string().regex(/^[A-Z]{3}$/, 'currency is an ISO 4217 code like "USD"'),
      unit: z
        .enum(['major', 'minor', 'micros'])
        .optional()
        .describe(
          'what amount counts: major units (12.5 dollars, the default), minor units (1250 cents) or micros (12500000)',
        ),
      label: z.string().max(80).optional(),
    }),
  }),
  component({
    name: 'Badge',
    summary: 'A short status word in a coloured pill.',
    children: false,
    props: z.strictObject({ text: z.union([z.string().max(40), z.number()]), tone: tone.optional() }),
  }),
  component({
    name: 'Button',
    summary: 'A button that calls a host tool (guarded: approvals and audit apply) or sets local state.',
    children: false,
    props: z.strictObject({
      label: z.string().max(60),
      action: buttonAction,
      confirm: z.string().max(200).optional().describe('a question asked before the action runs'),
      tone: z.enum(['primary', 'secondary', 'danger']).optional(),
    }),
    literalOnly: ['action'],
  }),
  component({
    name: 'List',
    summary: 'One line per row: a primary field, an optional secondary and trailing field.',
    children: false,
    props: z.strictObject({
      items: rowsOf('items'),
      primary: fieldPath,
      secondary: fieldPath.optional(),
      trailing: fieldPath.optional(),
      empty: z.string().max(120).optional().describe('shown when there are no items'),
    }),
    literalOnly: ['primary', 'secondary', 'trailing'],
    rowFields: { rows: 'items', fields: (props) => fieldsAt(props, ['primary', 'secondary', 'trailing']) },
  }),
  component({
    name: 'Table',
    summary: 'A data table: one row per item, one column per field.',
    children: false,
    props: z.strictObject({
      rows: rowsOf('rows'),
      columns: z.array(tableColumn).min(1).max(12),
      empty: z.string().max(120).optional().describe('shown when there are no rows'),
      limit: z.number().int().min(1).max(1000).optional().describe('show at most this many rows'),
    }),
    literalOnly: ['columns'],
    rowFields: {
      rows: 'rows',
      fields: (props) =>
        (props.columns as { field: string }[]).map((column, i) => ({
          at: `columns[${i}].field`,
          field: column.field,
        })),
    },
  }),
  component({
    name: 'BarChart',
    summary: 'Bars: one per row, x the category field, y the value field.',
    children: false,
    props: z.strictObject({
      data: rowsOf('bars'),
      x: fieldPath,
      y: fieldPath,
      label: z.string().max(80).optional(),
    }),
    literalOnly: ['x', 'y'],
    rowFields: { rows: 'data', fields: (props) => fieldsAt(props, ['x', 'y']) },
  }),
  component({
    name: 'LineChart',
    summary: 'Lines over x: one series per y field.',
    children: false,
    props: z.strictObject({
      data: rowsOf('points'),
      x: fieldPath,
      y: z.union([fieldPath, z.array(fieldPath).min(1).max(6)], {
        error: 'y is a field path or a list of up to 6',
      }),
      label: z.string().max(80).optional(),
    }),
    literalOnly: ['x', 'y'],
    rowFields: { rows: 'data', fields: (props) => fieldsAt(props, ['x', 'y']) },
  }),
];

const BY_NAME = new Map(KIT.map((entry) => [entry.name, entry]));

export const kitComponent = (name: string): KitComponent | undefined => BY_NAME.get(name);

export const KIT_NAMES: readonly string[] = KIT.map((entry) => entry.name);

/** One component as the agent is told of it: its props as JSON Schema. */
export interface KitCatalogEntry {
  name: string;
  summary: string;
  children: boolean;
  props: Record<string, unknown>;
}

let catalog: KitCatalogEntry[] | undefined;

/** The Kit as data, for the agent's instructions and for clients. */
export function kitCatalog(): readonly KitCatalogEntry[] {
  catalog ??= KIT.map((entry) => ({
    name: entry.name,
    summary: entry.summary,
    children: entry.children,
    props: propsJsonSchema(entry),
  }));
  return catalog;
}

const jsonSchemas = new Map<string, Record<string, unknown>>();

/** The component's props as JSON Schema (draft 2020-12), computed once. */
export function propsJsonSchema(entry: KitComponent): Record<string, unknown> {
  let schema = jsonSchemas.get(entry.name);
  if (!schema) {
    const { $schema: _, ...rest } = z.toJSONSchema(entry.props, { unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    schema = rest;
    jsonSchemas.set(entry.name, schema);
  }
  return schema;
}
