/**
 * The Kit as React components: one small component per Kit name, semantic HTML, class names
 * prefixed `svc-` (styled by `@service/react/styles.css`). Each takes its props already resolved
 * from bindings, as `unknown`: a value of the wrong type shows as nothing rather than throwing.
 * Every string is rendered as text, never as markup.
 */
import { type ReactNode, useId, useState } from 'react';
import { type AppAction, actionOf, runAction } from './actions.js';
import { isRecord, readPath, rowsOf, type Scope } from './bindings.js';
import { BarChartView, LineChartView } from './charts.js';
import { formatDate, formatMoney, formatNumber, numberOrNull, oneOf, textOf } from './format.js';

/** What every Kit component may use besides its props. */
export interface KitContext {
  scope: Scope;
  locale: string | undefined;
  setState(key: string, value: unknown): void;
  onAction: ((action: AppAction) => void | Promise<void>) | undefined;
}

export interface KitProps {
  props: Record<string, unknown>;
  kit: KitContext;
  children?: ReactNode;
}

const ALIGN = ['start', 'center', 'end', 'stretch'] as const;
const JUSTIFY = ['start', 'center', 'end', 'between'] as const;
const TEXT_TONE = ['default', 'muted', 'success', 'warning', 'danger'] as const;
const BADGE_TONE = ['neutral', 'info', 'success', 'warning', 'danger'] as const;
const BUTTON_TONE = ['primary', 'secondary', 'danger'] as const;

/** A gap in pixels, 0–64 as the Kit allows; anything else is the stylesheet's default. */
function gapStyle(value: unknown) {
  const gap = numberOrNull(value);
  return gap === null ? undefined : { gap: `${Math.min(64, Math.max(0, Math.round(gap)))}px` };
}

function Stack({ props, children }: KitProps) {
  const align = oneOf(props.align, ALIGN, 'stretch');
  return (
    <div className={`svc-stack svc-align-${align}`} style={gapStyle(props.gap)}>
      {children}
    </div>
  );
}

function Row({ props, children }: KitProps) {
  const align = oneOf(props.align, ALIGN, 'center');
  const justify = oneOf(props.justify, JUSTIFY, 'start');
  return (
    <div className={`svc-row svc-align-${align} svc-justify-${justify}`} style={gapStyle(props.gap)}>
      {children}
    </div>
  );
}

function Card({ props, children }: KitProps) {
  const id = useId();
  const title = textOf(props.title);
  return (
    <section className="svc-card" aria-labelledby={title ? id : undefined}>
      {title ? (
        <div className="svc-card-title" id={id}>
          {title}
        </div>
      ) : null}
      {children}
    </section>
  );
}

/** Levels 1–3 are h2–h4: the host page owns its h1, and an app is a part of that page. */
function Heading({ props }: KitProps) {
  const level = oneOf(String(props.level), ['1', '2', '3'], '1');
  const Tag = (['h2', 'h3', 'h4'] as const)[Number(level) - 1] ?? 'h2';
  return <Tag className={`svc-heading svc-heading-${level}`}>{textOf(props.text)}</Tag>;
}

function Text({ props }: KitProps) {
  const tone = oneOf(props.tone, TEXT_TONE, 'default');
  return <p className={`svc-text svc-tone-${tone}`}>{textOf(props.text)}</p>;
}

function Stat({ props, kit }: KitProps) {
  const value = typeof props.value === 'number' ? formatNumber(props.value, kit.locale) : textOf(props.value);
  const unit = textOf(props.unit);
  const delta = numberOrNull(props.delta);
  const direction = delta === null ? null : delta > 0 ? 'up' : delta < 0 ? 'down' : 'flat';
  return (
    <dl className="svc-stat">
      <dt className="svc-stat-label">{textOf(props.label)}</dt>
      <dd className="svc-stat-value">
        {value}
        {unit ? <span className="svc-stat-unit"> {unit}</span> : null}
      </dd>
      {delta !== null ? (
        <dd className={`svc-delta svc-delta-${direction}`}>
          {delta > 0 ? '+' : delta < 0 ? '−' : '±'}
          {formatNumber(Math.abs(delta), kit.locale)}
        </dd>
      ) : null}
    </dl>
  );
}

function Money({ props, kit }: KitProps) {
  const label = textOf(props.label);
  const amount = formatMoney(props.amount, props.currency, props.unit, kit.locale);
  if (!label) return <span className="svc-money">{amount}</span>;
  return (
    <dl className="svc-money">
      <dt className="svc-money-label">{label}</dt>
      <dd className="svc-money-amount">{amount}</dd>
    </dl>
  );
}

function Badge({ props }: KitProps) {
  const tone = oneOf(props.tone, BADGE_TONE, 'neutral');
  return <span className={`svc-badge svc-tone-${tone}`}>{textOf(props.text)}</span>;
}

function Button({ props, kit }: KitProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const tone = oneOf(props.tone, BUTTON_TONE, 'primary');
  const action = actionOf(props.action);
  const confirm = textOf(props.confirm);
  // A tool call needs the host to carry it out; without onAction the button says it cannot act.
  const disabled = busy || action === null || (action.type === 'tool' && kit.onAction === undefined);

  async function run() {
    if (!action) return;
    setError(null);
    const failure = await runAction(action, confirm, {
      scope: kit.scope,
      setState: kit.setState,
      onAction: kit.onAction,
      ask: (question) => window.confirm(question),
      busy: setBusy,
    });
    setError(failure);
  }

  return (
    <span className="svc-button-wrap">
      <button
        type="button"
        className={`svc-button svc-button-${tone}`}
        disabled={disabled}
        aria-busy={busy || undefined}
        onClick={() => void run()}
      >
        {textOf(props.label)}
      </button>
      {error ? (
        <span className="svc-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  );
}

function Empty({ text, fallback }: { text: unknown; fallback: string }) {
  return <p className="svc-empty">{textOf(text) || fallback}</p>;
}

function List({ props }: KitProps) {
  const rows = rowsOf(props.items);
  if (rows.length === 0) return <Empty text={props.empty} fallback="Nothing to show." />;
  const field = (row: Record<string, unknown>, key: string) =>
    typeof props[key] === 'string' ? textOf(readPath(row, props[key] as string)) : '';
  return (
    <ul className="svc-list">
      {rows.map((row, i) => {
        const secondary = field(row, 'secondary');
        const trailing = field(row, 'trailing');
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity of their own
          <li className="svc-list-item" key={i}>
            <span className="svc-list-main">
              <span className="svc-list-primary">{field(row, 'primary')}</span>
              {secondary ? <span className="svc-list-secondary">{secondary}</span> : null}
            </span>
            {trailing ? <span className="svc-list-trailing">{trailing}</span> : null}
          </li>
        );
      })}
    </ul>
  );
}

interface Column {
  field: string;
  label: string;
  format: string;
  currency: unknown;
}

function columnsOf(value: unknown): Column[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter(isRecord)
    .filter((column) => typeof column.field === 'string')
    .slice(0, 12)
    .map((column) => ({
      field: column.field as string,
      label: textOf(column.label),
      format: oneOf(column.format, ['text', 'number', 'money', 'date', 'badge'], 'text'),
      currency: column.currency,
    }));
}

/** A table cell. Money columns count in minor units (cents), as hosts' order fields usually do. */
function cell(column: Column, row: Record<string, unknown>, locale: string | undefined): ReactNode {
  const value = readPath(row, column.field);
  switch (column.format) {
    case 'number':
      return formatNumber(value, locale);
    case 'money':
      return formatMoney(value, column.currency, 'minor', locale);
    case 'date':
      return formatDate(value, locale);
    case 'badge':
      return textOf(value) ? <span className="svc-badge svc-tone-neutral">{textOf(value)}</span> : '';
    default:
      return textOf(value);
  }
}

function Table({ props, kit }: KitProps) {
  const limit = numberOrNull(props.limit);
  const rows = rowsOf(props.rows, limit === null ? 1000 : Math.min(1000, Math.max(1, Math.floor(limit))));
  const columns = columnsOf(props.columns);
  if (columns.length === 0) return null;
  if (rows.length === 0) return <Empty text={props.empty} fallback="No rows." />;
  return (
    <div className="svc-table-wrap">
      <table className="svc-table">
        <thead>
          <tr>
            {columns.map((column, c) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed by the document
              <th scope="col" key={c} className={`svc-col-${column.format}`}>
                {column.label || column.field}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, r) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity of their own
            <tr key={r}>
              {columns.map((column, c) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed by the document
                <td key={c} className={`svc-col-${column.format}`}>
                  {cell(column, row, kit.locale)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function BarChart({ props, kit }: KitProps) {
  if (typeof props.x !== 'string' || typeof props.y !== 'string') return null;
  return (
    <BarChartView
      rows={rowsOf(props.data)}
      x={props.x}
      y={props.y}
      label={textOf(props.label)}
      locale={kit.locale}
    />
  );
}

function LineChart({ props, kit }: KitProps) {
  const ys =
    typeof props.y === 'string'
      ? [props.y]
      : Array.isArray(props.y)
        ? props.y.filter((y) => typeof y === 'string')
        : [];
  if (typeof props.x !== 'string' || ys.length === 0) return null;
  // One line per field: a field named twice would draw the same line twice.
  const unique = [...new Set(ys)];
  return (
    <LineChartView
      rows={rowsOf(props.data)}
      x={props.x}
      ys={unique}
      label={textOf(props.label)}
      locale={kit.locale}
    />
  );
}

/** Kit name → component, and whether it takes children. */
export const KIT_VIEWS: ReadonlyMap<string, { view: (props: KitProps) => ReactNode; children: boolean }> =
  new Map([
    ['Stack', { view: Stack, children: true }],
    ['Row', { view: Row, children: true }],
    ['Card', { view: Card, children: true }],
    ['Heading', { view: Heading, children: false }],
    ['Text', { view: Text, children: false }],
    ['Stat', { view: Stat, children: false }],
    ['Money', { view: Money, children: false }],
    ['Badge', { view: Badge, children: false }],
    ['Button', { view: Button, children: false }],
    ['List', { view: List, children: false }],
    ['Table', { view: Table, children: false }],
    ['BarChart', { view: BarChart, children: false }],
    ['LineChart', { view: LineChart, children: false }],
  ]);
