/**
 * `<AppView>` rendered on the server (react-dom/server): every Kit component's markup, bindings
 * from query results and local state, money in each unit, hostile strings shown as text, and
 * documents the Kit cannot render rendering nothing rather than throwing.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { type AppDocument, type AppNode, AppView, type AppViewProps, formatMoney } from '../src/index.js';

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';

function doc(root: AppNode, extra: Partial<AppDocument> = {}): AppDocument {
  return { version: 1, title: 'Test app', root, ...extra };
}

function html(root: AppNode, props: Omit<AppViewProps, 'document'> & { extra?: Partial<AppDocument> } = {}) {
  const { extra, ...rest } = props;
  return renderToStaticMarkup(<AppView document={doc(root, extra)} locale="en-US" {...rest} />);
}

/** The markup inside the app's own section. */
function inner(markup: string): string {
  return markup.replace(/^<section class="svc-app"[^>]*>/, '').replace(/<\/section>$/, '');
}

const orders = {
  count: 2,
  items: [
    { id: 'ord_1', customer: { name: 'Ada' }, total_cents: 1250, status: 'open', placed: '2030-01-05' },
    { id: 'ord_2', customer: { name: 'Bob' }, total_cents: 99, status: 'paid', placed: '2030-02-10' },
  ],
};

describe('the Kit', () => {
  it('labels the app with its title', () => {
    expect(html({ component: 'Text', props: { text: 'hi' } })).toBe(
      '<section class="svc-app" aria-label="Test app"><p class="svc-text svc-tone-default">hi</p></section>',
    );
  });

  it('Stack and Row lay out their children with the gap and alignment asked', () => {
    const stack = inner(
      html({
        component: 'Stack',
        props: { gap: 8, align: 'center' },
        children: [
          { component: 'Text', props: { text: 'a' } },
          {
            component: 'Row',
            props: { gap: 100, justify: 'between' },
            children: [{ component: 'Badge', props: { text: 'b' } }],
          },
        ],
      }),
    );
    expect(stack).toBe(
      '<div class="svc-stack svc-align-center" style="gap:8px"><p class="svc-text svc-tone-default">a</p>' +
        '<div class="svc-row svc-align-center svc-justify-between" style="gap:64px"><span class="svc-badge svc-tone-neutral">b</span></div></div>',
    );
  });

  it('Card is a section named by its title', () => {
    const card = inner(
      html({
        component: 'Card',
        props: { title: 'Totals' },
        children: [{ component: 'Text', props: { text: 'x' } }],
      }),
    );
    const id = /id="([^"]+)"/.exec(card)?.[1];
    expect(id).toBeTruthy();
    expect(card).toContain(
      `<section class="svc-card" aria-labelledby="${id}"><div class="svc-card-title" id="${id}">Totals</div>`,
    );
    expect(inner(html({ component: 'Card', children: [] }))).toBe('<section class="svc-card"></section>');
  });

  it('Heading levels 1–3 are h2–h4 under the host page’s h1', () => {
    expect(inner(html({ component: 'Heading', props: { text: 'Top' } }))).toBe(
      '<h2 class="svc-heading svc-heading-1">Top</h2>',
    );
    expect(inner(html({ component: 'Heading', props: { text: 'Sub', level: 3 } }))).toBe(
      '<h4 class="svc-heading svc-heading-3">Sub</h4>',
    );
    expect(inner(html({ component: 'Heading', props: { text: 'Odd', level: 7 } }))).toBe(
      '<h2 class="svc-heading svc-heading-1">Odd</h2>',
    );
  });

  it('Text shows strings and numbers in its tone; an unknown tone is the default', () => {
    expect(inner(html({ component: 'Text', props: { text: 42, tone: 'danger' } }))).toBe(
      '<p class="svc-text svc-tone-danger">42</p>',
    );
    expect(inner(html({ component: 'Text', props: { text: 'x', tone: 'evil" onclick="x' } }))).toBe(
      '<p class="svc-text svc-tone-default">x</p>',
    );
  });

  it('Stat shows its label, value, unit and a signed change', () => {
    expect(
      inner(html({ component: 'Stat', props: { label: 'Revenue', value: 12345.5, unit: 'USD', delta: 3 } })),
    ).toBe(
      '<dl class="svc-stat"><dt class="svc-stat-label">Revenue</dt><dd class="svc-stat-value">12,345.5<span class="svc-stat-unit"> USD</span></dd>' +
        '<dd class="svc-delta svc-delta-up">+3</dd></dl>',
    );
    expect(inner(html({ component: 'Stat', props: { label: 'Churn', value: '4%', delta: -1.5 } }))).toContain(
      '<dd class="svc-delta svc-delta-down">−1.5</dd>',
    );
  });

  it('Money formats its amount in the unit it is counted in', () => {
    const money = (props: Record<string, unknown>) => inner(html({ component: 'Money', props }));
    expect(money({ amount: 12.5, currency: 'USD' })).toBe('<span class="svc-money">$12.50</span>');
    expect(money({ amount: 1250, currency: 'USD', unit: 'minor', label: 'Total' })).toBe(
      '<dl class="svc-money"><dt class="svc-money-label">Total</dt><dd class="svc-money-amount">$12.50</dd></dl>',
    );
    expect(money({ amount: 12_500_000, currency: 'USD', unit: 'micros' })).toBe(
      '<span class="svc-money">$12.50</span>',
    );
    expect(money({ amount: 1500, currency: 'JPY', unit: 'minor' })).toBe(
      '<span class="svc-money">¥1,500</span>',
    );
  });

  it('formatMoney keeps fractions of a cent in micros and never throws on a bad currency', () => {
    expect(formatMoney(1_500, 'USD', 'micros', 'en-US')).toBe('$0.0015');
    expect(formatMoney(250, 'EUR', 'minor', 'de-DE')).toBe('2,50\u00a0€');
    expect(formatMoney(1250, 'KWD', 'minor', 'en-US')).toBe('KWD\u00a01.250');
    expect(formatMoney(5, 'usd', 'major', 'en-US')).toBe('5');
    expect(formatMoney('n/a', 'USD', 'major', 'en-US')).toBe('n/a');
  });

  it('Badge shows its text in its tone', () => {
    expect(inner(html({ component: 'Badge', props: { text: 'Paid', tone: 'success' } }))).toBe(
      '<span class="svc-badge svc-tone-success">Paid</span>',
    );
  });

  it('Button is a real button; a tool button without a host to run it is disabled', () => {
    const tool = { type: 'tool', tool: 'refund_order', input: { id: 'ord_1' } };
    expect(
      inner(html({ component: 'Button', props: { label: 'Refund', action: tool, tone: 'danger' } })),
    ).toBe(
      '<span class="svc-button-wrap"><button type="button" class="svc-button svc-button-danger" disabled="">Refund</button></span>',
    );
    expect(
      inner(html({ component: 'Button', props: { label: 'Refund', action: tool } }, { onAction: () => {} })),
    ).toBe(
      '<span class="svc-button-wrap"><button type="button" class="svc-button svc-button-primary">Refund</button></span>',
    );
    expect(
      inner(
        html({
          component: 'Button',
          props: { label: 'Paid', action: { type: 'setState', key: 'tab', value: 'paid' } },
        }),
      ),
    ).not.toContain('disabled');
    expect(inner(html({ component: 'Button', props: { label: 'Odd', action: { type: 'eval' } } }))).toContain(
      'disabled=""',
    );
  });

  it('List shows a line per row, or its empty text', () => {
    const list = inner(
      html(
        {
          component: 'List',
          props: {
            items: { $query: 'orders', path: 'items' },
            primary: 'customer.name',
            secondary: 'id',
            trailing: 'status',
          },
        },
        { queries: { orders } },
      ),
    );
    expect(list).toBe(
      '<ul class="svc-list">' +
        '<li class="svc-list-item"><span class="svc-list-main"><span class="svc-list-primary">Ada</span><span class="svc-list-secondary">ord_1</span></span><span class="svc-list-trailing">open</span></li>' +
        '<li class="svc-list-item"><span class="svc-list-main"><span class="svc-list-primary">Bob</span><span class="svc-list-secondary">ord_2</span></span><span class="svc-list-trailing">paid</span></li>' +
        '</ul>',
    );
    expect(
      inner(html({ component: 'List', props: { items: [], primary: 'id', empty: 'No orders yet.' } })),
    ).toBe('<p class="svc-empty">No orders yet.</p>');
  });

  it('Table shows a header row and formats each column', () => {
    const table = inner(
      html(
        {
          component: 'Table',
          props: {
            rows: { $query: 'orders', path: 'items' },
            columns: [
              { field: 'id', label: 'Order' },
              { field: 'customer.name', label: 'Customer' },
              { field: 'total_cents', label: 'Total', format: 'money', currency: 'USD' },
              { field: 'placed', label: 'Placed', format: 'date' },
              { field: 'status', label: 'Status', format: 'badge' },
            ],
            limit: 1,
          },
        },
        { queries: { orders } },
      ),
    );
    expect(table).toContain('<th scope="col" class="svc-col-text">Order</th>');
    expect(table).toContain('<th scope="col" class="svc-col-money">Total</th>');
    expect(table).toContain(
      '<tr><td class="svc-col-text">ord_1</td><td class="svc-col-text">Ada</td><td class="svc-col-money">$12.50</td>' +
        '<td class="svc-col-date">Jan 5, 2030</td><td class="svc-col-badge"><span class="svc-badge svc-tone-neutral">open</span></td></tr>',
    );
    expect(table).not.toContain('ord_2');
    expect(
      inner(html({ component: 'Table', props: { rows: [], columns: [{ field: 'id', label: 'Id' }] } })),
    ).toBe('<p class="svc-empty">No rows.</p>');
  });

  it('BarChart draws one bar per row and gives screen readers the numbers as a table', () => {
    const chart = inner(
      html({
        component: 'BarChart',
        props: {
          data: [
            { m: 'Jan', v: 10 },
            { m: 'Feb', v: 30 },
          ],
          x: 'm',
          y: 'v',
          label: 'Sales',
        },
      }),
    );
    expect(chart).toMatch(
      /^<figure class="svc-chart svc-chart-bar"><figcaption class="svc-chart-label">Sales<\/figcaption><svg/,
    );
    expect(chart).toContain('aria-hidden="true"');
    expect(chart.match(/<rect /g)).toHaveLength(2);
    expect(chart).toContain(
      '<table class="svc-visually-hidden"><caption>Sales</caption><thead><tr><th scope="col">m</th><th scope="col">v</th></tr></thead>' +
        '<tbody><tr><th scope="row">Jan</th><td>10</td></tr><tr><th scope="row">Feb</th><td>30</td></tr></tbody></table>',
    );
    // The taller bar is three times the shorter one.
    const heights = [...chart.matchAll(/<rect [^>]*height="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(heights[1]! / heights[0]!).toBeCloseTo(3);
  });

  it('LineChart draws one line per series with a legend', () => {
    const chart = inner(
      html({
        component: 'LineChart',
        props: {
          data: [
            { d: 'Mon', a: 1, b: 2 },
            { d: 'Tue', a: 3, b: 1 },
            { d: 'Wed', a: 2, b: 2 },
          ],
          x: 'd',
          y: ['a', 'b', 'a'],
        },
      }),
    );
    expect(chart.match(/<polyline /g)).toHaveLength(2);
    expect(chart).toContain('class="svc-line svc-series-1"');
    expect(chart).toContain('<ul class="svc-legend" aria-hidden="true">');
    expect(chart).toContain('<tr><th scope="row">Tue</th><td>3</td><td>1</td></tr>');
    expect(inner(html({ component: 'LineChart', props: { data: [], x: 'd', y: 'a' } }))).toContain(
      '<p class="svc-empty">No data.</p>',
    );
  });
});

describe('bindings', () => {
  it('read a field of a query’s result, or the whole result with no path', () => {
    const view = (value: unknown, queries: Record<string, unknown>) =>
      inner(html({ component: 'Text', props: { text: value as never } }, { queries }));
    expect(view({ $query: 'orders', path: 'items[1].customer.name' }, { orders })).toContain('>Bob<');
    expect(view({ $query: 'orders', path: 'count' }, { orders })).toContain('>2<');
    expect(view({ $query: 'total' }, { total: 7 })).toContain('>7<');
    expect(view({ $query: 'total', path: '' }, { total: 7 })).toContain('>7<');
    expect(view({ $query: 'list', path: '[0].id' }, { list: [{ id: 'first' }] })).toContain('>first<');
  });

  it('read as nothing when the query, the field or the shape is missing', () => {
    const view = (value: unknown, queries: Record<string, unknown> = { orders }) =>
      inner(html({ component: 'Text', props: { text: value as never } }, { queries }));
    expect(view({ $query: 'missing', path: 'x' })).toBe('<p class="svc-text svc-tone-default"></p>');
    expect(view({ $query: 'orders', path: 'items[9].id' })).toBe('<p class="svc-text svc-tone-default"></p>');
    expect(view({ $query: 'orders', path: 'items' })).toBe('<p class="svc-text svc-tone-default"></p>');
    expect(view({ $query: 'orders', path: 'a..b' })).toBe('<p class="svc-text svc-tone-default"></p>');
    expect(view({ $query: 'orders', path: 'constructor' })).toBe('<p class="svc-text svc-tone-default"></p>');
    expect(view({ $query: 'toString' }, {})).toBe('<p class="svc-text svc-tone-default"></p>');
  });

  it('read local state: the document’s initial values, under the host’s', () => {
    const root: AppNode = { component: 'Badge', props: { text: { $state: 'tab' } } };
    expect(inner(html(root, { extra: { state: { tab: 'open' } } }))).toContain('>open<');
    expect(inner(html(root, { extra: { state: { tab: 'open' } }, state: { tab: 'paid' } }))).toContain(
      '>paid<',
    );
    expect(inner(html(root))).toBe('<span class="svc-badge svc-tone-neutral"></span>');
  });

  it('bind any prop, a list’s rows included', () => {
    const stat = inner(
      html(
        {
          component: 'Stat',
          props: { label: { $state: 'label' }, value: { $query: 'orders', path: 'count' } },
        },
        { queries: { orders }, state: { label: 'Open orders' } },
      ),
    );
    expect(stat).toContain('<dt class="svc-stat-label">Open orders</dt><dd class="svc-stat-value">2</dd>');
  });
});

describe('hostile data', () => {
  it('shows markup in strings as text, wherever it is rendered', () => {
    const data = { rows: [{ name: HOSTILE, value: 1 }] };
    const markup = html(
      {
        component: 'Stack',
        children: [
          { component: 'Heading', props: { text: HOSTILE } },
          { component: 'Text', props: { text: { $query: 'data', path: 'rows[0].name' } } },
          { component: 'Card', props: { title: HOSTILE }, children: [] },
          { component: 'Stat', props: { label: HOSTILE, value: HOSTILE, unit: HOSTILE } },
          { component: 'Money', props: { amount: 1, currency: 'USD', label: HOSTILE } },
          { component: 'Badge', props: { text: HOSTILE } },
          {
            component: 'Button',
            props: { label: HOSTILE, action: { type: 'setState', key: 'k', value: 1 } },
          },
          { component: 'List', props: { items: { $query: 'data', path: 'rows' }, primary: 'name' } },
          {
            component: 'Table',
            props: { rows: { $query: 'data', path: 'rows' }, columns: [{ field: 'name', label: HOSTILE }] },
          },
          {
            component: 'BarChart',
            props: { data: { $query: 'data', path: 'rows' }, x: 'name', y: 'value', label: HOSTILE },
          },
          {
            component: 'LineChart',
            props: { data: { $query: 'data', path: 'rows' }, x: 'name', y: 'value', label: HOSTILE },
          },
        ],
      },
      { queries: { data }, extra: { title: HOSTILE } },
    );
    expect(markup).not.toMatch(/<script|<img/i);
    expect(markup).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;',
    );
    expect(markup).toContain(`aria-label="&lt;script&gt;`);
  });
});

describe('documents the Kit cannot render', () => {
  it('render unknown components as nothing, and their known siblings as usual', () => {
    const markup = inner(
      html({
        component: 'Stack',
        children: [
          { component: 'Iframe', props: { src: 'https://evil.test' } },
          { component: 'constructor' },
          { component: '__proto__' },
          { component: 'Text', props: { text: 'kept' } },
        ],
      }),
    );
    expect(markup).toBe(
      '<div class="svc-stack svc-align-stretch"><p class="svc-text svc-tone-default">kept</p></div>',
    );
    expect(inner(html({ component: 'Nope' }))).toBe('');
  });

  it('never throw on malformed nodes and props', () => {
    const broken = [
      null,
      'Text',
      { component: 'Text', props: 'not an object' },
      { component: 'Text', props: { text: { deep: 'object' } } },
      { component: 'Text', props: { text: Number.NaN } },
      { component: 'Stack', children: 'not a list' },
      { component: 'Heading', children: [{ component: 'Text', props: { text: 'leaf children ignored' } }] },
      { component: 'Table', props: { rows: 'no', columns: 'no' } },
      { component: 'Table', props: { rows: [1, null, { id: 1 }], columns: [{ field: 5 }, { field: 'id' }] } },
      { component: 'List', props: { items: [{ a: 1 }] } },
      { component: 'BarChart', props: { data: [{ x: 'a', y: 'not a number' }], x: 'x', y: 'y' } },
      { component: 'LineChart', props: { data: [{ x: 1 }], x: 'x', y: [3, null] } },
      { component: 'Money', props: { amount: 5, currency: 'NOPE' } },
      { component: 'Button', props: { label: 'x', action: null } },
    ];
    const markup = inner(html({ component: 'Stack', children: broken as AppNode[] }));
    expect(markup).not.toContain('leaf children ignored');
    expect(markup).toContain('<p class="svc-text svc-tone-default"></p>');
    expect(renderToStaticMarkup(<AppView document={null as unknown as AppDocument} />)).toBe(
      '<section class="svc-app"></section>',
    );
  });

  it('write in the default locale when given one Intl does not take', () => {
    const written: AppNode = {
      component: 'Stack',
      children: [
        { component: 'Stat', props: { label: 'n', value: 1234.5 } },
        { component: 'Money', props: { amount: 1250, currency: 'EUR', unit: 'minor' } },
        {
          component: 'Table',
          props: { rows: [{ on: '2030-01-05' }], columns: [{ field: 'on', format: 'date' }] },
        },
        { component: 'BarChart', props: { data: [{ m: 'Jan', v: 1e6 }], x: 'm', y: 'v' } },
      ],
    };
    const byDefault = renderToStaticMarkup(<AppView document={doc(written)} />);
    // An Accept-Language value, garbage, an empty string, an underscore: each a RangeError to Intl.
    for (const locale of ['en-US,en;q=0.9', 'not a locale!', '', 'en_US']) {
      expect(html(written, { locale }), locale).toBe(byDefault);
    }
  });

  it('keep chart coordinates finite for numbers near the largest a double holds', () => {
    const data = [
      { x: 'a', v: 1.7e308 },
      { x: 'b', v: -1.7e308 },
      { x: 'c', v: 1e308 },
    ];
    for (const component of ['BarChart', 'LineChart']) {
      const chart = inner(
        html({ component, props: { data, x: 'x', y: component === 'BarChart' ? 'v' : ['v'] } }),
      );
      expect(chart, component).not.toMatch(/NaN|Infinity/);
    }
    const bars = inner(html({ component: 'BarChart', props: { data, x: 'x', y: 'v' } }));
    const heights = [...bars.matchAll(/<rect [^>]*height="([\d.e+]+)"/g)].map((m) => Number(m[1]));
    // Each bar is drawn from zero: the first two equally tall, the third 1/1.7 of them.
    expect(heights[0]).toBeCloseTo(heights[1]!);
    expect(heights[2]! / heights[0]!).toBeCloseTo(1 / 1.7);
  });

  it('stop at the document caps: 16 levels deep, 400 nodes', () => {
    let deep: AppNode = { component: 'Text', props: { text: 'bottom' } };
    for (let level = 0; level < 40; level++) deep = { component: 'Stack', children: [deep] };
    const nested = inner(html(deep));
    expect(nested.match(/<div class="svc-stack/g)).toHaveLength(16);
    expect(nested).not.toContain('bottom');

    const wide = inner(
      html({
        component: 'Stack',
        children: Array.from({ length: 1000 }, () => ({ component: 'Badge', props: { text: 'b' } })),
      }),
    );
    expect(wide.match(/svc-badge/g)).toHaveLength(399);
  });
});
