/**
 * Charts with uPlot (small, fast, canvas), drawn from the JSON a page writes into `data-chart`:
 * `{ title, x: string[], series: [{ label, values }], unit: 'usd_micros' | 'count', kind:
 * 'bars' | 'lines' }`. Bars are stacked: each series is drawn over the running total of those
 * before it, the last (smallest total) on top.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

interface ChartData {
  title: string;
  x: string[];
  series: { label: string; values: number[] }[];
  unit: 'usd_micros' | 'count';
  kind: 'bars' | 'lines';
}

const PALETTE = ['#2f6fde', '#e07b00', '#1b9e77', '#c2185b', '#7b5ea7', '#5f6b7a', '#b8860b', '#00838f'];

const usd = (micros: number) =>
  `$${(micros / 1_000_000).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: micros !== 0 && Math.abs(micros) < 10_000 ? 4 : 2 })}`;

export function drawCharts(root: Document): uPlot[] {
  const drawn: uPlot[] = [];
  for (const element of root.querySelectorAll<HTMLElement>('[data-chart]')) {
    const data = JSON.parse(element.dataset.chart ?? 'null') as ChartData | null;
    if (!data || data.x.length === 0) continue;
    drawn.push(draw(element, data));
  }
  return drawn;
}

function draw(element: HTMLElement, data: ChartData): uPlot {
  const format = data.unit === 'usd_micros' ? usd : (value: number) => String(value);
  const xs = data.x.map((_, i) => i);
  let columns = data.series.map((series) => series.values);
  if (data.kind === 'bars') {
    // Running totals, drawn largest first so each provider's share shows above the ones before.
    const totals = columns.map((_, i) =>
      xs.map((_, j) => columns.slice(0, i + 1).reduce((sum, values) => sum + (values[j] ?? 0), 0)),
    );
    columns = totals.reverse();
  }
  const labels = data.kind === 'bars' ? [...data.series].reverse() : data.series;
  const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
  const options: uPlot.Options = {
    width: Math.max(280, element.clientWidth),
    height: 240,
    title: undefined,
    // Half a slot of room at each end, so the first and last bars show whole.
    scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] } },
    axes: [
      { values: (_u, ticks) => ticks.map((tick) => (data.x[tick] ?? '').slice(5)) },
      { values: (_u, ticks) => ticks.map(format), size: 70 },
    ],
    legend: { live: true },
    series: [
      { label: 'Date', value: (_u, value) => (value == null ? '' : (data.x[value] ?? '')) },
      ...labels.map((series, i) => ({
        label: series.label,
        stroke: PALETTE[(labels.length - 1 - i) % PALETTE.length],
        fill: data.kind === 'bars' ? PALETTE[(labels.length - 1 - i) % PALETTE.length] : undefined,
        width: data.kind === 'bars' ? 0 : 2,
        ...(data.kind === 'bars' && bars ? { paths: bars, points: { show: false } } : {}),
        value: (_u: uPlot, value: number | null, _s: number, index: number | null) =>
          index == null
            ? ''
            : format(
                data.kind === 'bars'
                  ? (data.series[labels.length - 1 - i]?.values[index] ?? 0)
                  : (value ?? 0),
              ),
      })),
    ],
  };
  const plot = new uPlot(options, [xs, ...columns] as uPlot.AlignedData, element);
  element.dataset.drawn = 'true';
  new ResizeObserver(() => plot.setSize({ width: Math.max(280, element.clientWidth), height: 240 })).observe(
    element,
  );
  return plot;
}
