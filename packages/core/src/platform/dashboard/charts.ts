import { html, type SafeHtml } from '../../http/html.js';
import { money } from './format.js';

/** One line or stack of a chart: its label and one value per x. */
export interface ChartSeries {
  label: string;
  values: number[];
}

export interface ChartData {
  /** What the chart is of, for its accessible name. */
  title: string;
  /** The x values: ISO dates or timestamps, as labels. */
  x: string[];
  series: ChartSeries[];
  /** How the script formats values: micros as USD, or plain counts. */
  unit: 'usd_micros' | 'count';
  /** Stacked bars (spend by provider) or lines. */
  kind: 'bars' | 'lines';
}

/**
 * A chart: the script draws it (with uPlot) from the data in its attribute, and the same figures
 * stay readable as a table for screen readers and for a browser without script.
 */
export function chart(id: string, data: ChartData): SafeHtml {
  const format = (value: number) => (data.unit === 'usd_micros' ? money(value) : String(value));
  const empty = data.series.every((series) => series.values.every((value) => value === 0));
  return html`<figure class="chart" aria-labelledby="${id}-title">
<figcaption id="${id}-title">${data.title}</figcaption>
${empty ? html`<p class="muted" data-empty>Nothing yet in this period.</p>` : html`<div class="chart-canvas" id="${id}" data-chart="${JSON.stringify(data)}" role="img" aria-label="${data.title}"></div>`}
<details><summary>Figures as a table</summary>
<div class="table-scroll" role="region" aria-label="${data.title}" tabindex="0"><table><thead><tr><th scope="col">Date</th>${data.series.map((s) => html`<th scope="col">${s.label}</th>`)}</tr></thead>
<tbody>${data.x.map(
    (x, i) =>
      html`<tr><th scope="row">${x}</th>${data.series.map((s) => html`<td>${format(s.values[i] ?? 0)}</td>`)}</tr>`,
  )}</tbody></table></div></details>
</figure>`;
}
