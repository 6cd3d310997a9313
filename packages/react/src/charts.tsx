/**
 * Bar and line charts as inline SVG. The drawing is hidden from assistive technology; the same
 * numbers follow as a table that only screen readers see, so the chart is never a picture of data
 * someone cannot read.
 */
import { readPath } from './bindings.js';
import { formatNumber, numberOrNull, textOf } from './format.js';

const WIDTH = 480;
const HEIGHT = 220;
const PAD = { top: 12, right: 12, bottom: 28, left: 44 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;
/** Series colours come from the stylesheet (`.svc-series-0` ...), so hosts can restyle them. */
const MAX_SERIES = 6;

interface ChartProps {
  rows: Record<string, unknown>[];
  x: string;
  ys: string[];
  label: string;
  locale: string | undefined;
}

/**
 * The value scale: zero always on it, so bars grow from a real baseline. Values are measured in
 * units of the largest magnitude first, so a span near ±1e308 does not overflow to Infinity and
 * draw NaN coordinates.
 */
function scaleOf(values: number[]) {
  const min = Math.min(0, ...values);
  const max = Math.max(0, ...values);
  const unit = Math.max(max, -min) || 1;
  const span = max / unit - min / unit || 1;
  return {
    min,
    max,
    y: (value: number) => PAD.top + PLOT_H - ((value / unit - min / unit) / span) * PLOT_H,
  };
}

function Axis({ scale, locale }: { scale: ReturnType<typeof scaleOf>; locale: string | undefined }) {
  const zero = scale.y(0);
  return (
    <g className="svc-axis">
      <line x1={PAD.left} x2={WIDTH - PAD.right} y1={zero} y2={zero} />
      <text x={PAD.left - 6} y={scale.y(scale.max) + 4} textAnchor="end">
        {formatNumber(scale.max, locale)}
      </text>
      {scale.min < 0 ? (
        <text x={PAD.left - 6} y={scale.y(scale.min) + 4} textAnchor="end">
          {formatNumber(scale.min, locale)}
        </text>
      ) : null}
    </g>
  );
}

/** The chart's numbers as a table for screen readers. */
function DataTable({ rows, x, ys, label, locale }: ChartProps) {
  return (
    <table className="svc-visually-hidden">
      {label ? <caption>{label}</caption> : null}
      <thead>
        <tr>
          <th scope="col">{x}</th>
          {ys.map((y) => (
            <th scope="col" key={y}>
              {y}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity of their own
          <tr key={i}>
            <th scope="row">{textOf(readPath(row, x))}</th>
            {ys.map((y) => (
              <td key={y}>{formatNumber(readPath(row, y), locale)}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Chart({ kind, ...props }: ChartProps & { kind: 'bar' | 'line' }) {
  const { rows, label } = props;
  return (
    <figure className={`svc-chart svc-chart-${kind}`}>
      {label ? <figcaption className="svc-chart-label">{label}</figcaption> : null}
      {rows.length === 0 ? (
        <p className="svc-empty">No data.</p>
      ) : (
        <>
          <svg
            className="svc-chart-svg"
            viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
            aria-hidden="true"
            focusable="false"
            role="presentation"
          >
            {kind === 'bar' ? <Bars {...props} /> : <Lines {...props} />}
          </svg>
          {kind === 'line' ? <Legend ys={props.ys} /> : null}
          <DataTable {...props} />
        </>
      )}
    </figure>
  );
}

function Bars({ rows, x, ys, locale }: ChartProps) {
  const y = ys[0] ?? '';
  const values = rows.map((row) => numberOrNull(readPath(row, y)) ?? 0);
  const scale = scaleOf(values);
  const step = PLOT_W / rows.length;
  const width = Math.max(1, step * 0.7);
  return (
    <>
      <Axis scale={scale} locale={locale} />
      {values.map((value, i) => {
        const top = Math.min(scale.y(value), scale.y(0));
        const left = PAD.left + i * step + (step - width) / 2;
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: bars are drawn in row order
          <g key={i}>
            <rect
              className="svc-bar svc-series-0"
              x={left}
              y={top}
              width={width}
              height={Math.abs(scale.y(value) - scale.y(0))}
            />
            <text className="svc-tick" x={left + width / 2} y={HEIGHT - PAD.bottom + 16} textAnchor="middle">
              {clip(textOf(readPath(rows[i], x)))}
            </text>
          </g>
        );
      })}
    </>
  );
}

function Lines({ rows, x, ys, locale }: ChartProps) {
  const series = ys.map((y) => rows.map((row) => numberOrNull(readPath(row, y))));
  const scale = scaleOf(series.flat().filter((value): value is number => value !== null));
  const step = rows.length > 1 ? PLOT_W / (rows.length - 1) : 0;
  const xOf = (i: number) => PAD.left + (rows.length > 1 ? i * step : PLOT_W / 2);
  const last = rows.length - 1;
  return (
    <>
      <Axis scale={scale} locale={locale} />
      {series.map((values, s) => (
        <polyline
          key={ys[s]}
          className={`svc-line svc-series-${s % MAX_SERIES}`}
          fill="none"
          points={values
            .flatMap((value, i) => (value === null ? [] : [`${xOf(i)},${scale.y(value)}`]))
            .join(' ')}
        />
      ))}
      <text className="svc-tick" x={xOf(0)} y={HEIGHT - PAD.bottom + 16} textAnchor="start">
        {clip(textOf(readPath(rows[0], x)))}
      </text>
      {last > 0 ? (
        <text className="svc-tick" x={xOf(last)} y={HEIGHT - PAD.bottom + 16} textAnchor="end">
          {clip(textOf(readPath(rows[last], x)))}
        </text>
      ) : null}
    </>
  );
}

/** Tick labels stay short; the full text is in the table. */
function clip(text: string): string {
  return text.length > 12 ? `${text.slice(0, 11)}…` : text;
}

export function BarChartView(props: Omit<ChartProps, 'ys'> & { y: string }) {
  return <Chart kind="bar" {...props} ys={[props.y]} />;
}

export function LineChartView(props: ChartProps) {
  return <Chart kind="line" {...props} ys={props.ys.slice(0, MAX_SERIES)} />;
}

/** A legend for charts with more than one line, in the series' colours. */
function Legend({ ys }: { ys: string[] }) {
  if (ys.length < 2) return null;
  return (
    <ul className="svc-legend" aria-hidden="true">
      {ys.map((y, s) => (
        <li key={y}>
          <span className={`svc-swatch svc-series-${s % MAX_SERIES}`} />
          {y}
        </li>
      ))}
    </ul>
  );
}
