/**
 * `<AppPart>` rendered on the server (react-dom/server): the chat's `data-service-app` part in
 * each state, a build left `streaming` after its turn ended, malformed parts, and hostile strings
 * shown as text.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import {
  type AppDocument,
  AppPart,
  appPartView,
  type ChatPartLike,
  isAppPart,
  STOPPED_BUILD_REASON,
} from '../src/index.js';

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';
const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;';

const document: AppDocument = {
  version: 1,
  title: 'Open orders',
  root: {
    component: 'Stack',
    children: [
      { component: 'Heading', props: { text: 'Orders' } },
      { component: 'Button', props: { label: 'Refresh', action: { type: 'tool', tool: 'list_orders' } } },
    ],
  },
};

function part(data: unknown, id = 'app_1'): ChatPartLike {
  return { type: 'data-service-app', id, data };
}

function html(p: ChatPartLike, messageStreaming: boolean, onAction?: () => void) {
  return renderToStaticMarkup(
    <AppPart part={p} messageStreaming={messageStreaming} onAction={onAction} locale="en-US" />,
  );
}

describe('AppPart', () => {
  it('knows its part among the message parts', () => {
    expect(isAppPart(part({ state: 'final' }))).toBe(true);
    expect(isAppPart({ type: 'text' })).toBe(false);
    expect(isAppPart({ type: 'data-other', data: { state: 'final' } })).toBe(false);
  });

  it('a build with no document yet is a busy status and nothing painted', () => {
    const markup = html(
      part({ state: 'streaming', appId: 'app_1', title: 'Open orders', document: null }),
      true,
    );
    expect(markup).toBe(
      '<div class="svc-app-part svc-app-part-building" data-service-app="app_1" aria-busy="true">' +
        '<p class="svc-app-part-status" role="status">Building Open orders…</p></div>',
    );
    expect(html(part({ state: 'streaming', appId: 'app_1', title: null, document: null }), true)).toContain(
      '<p class="svc-app-part-status" role="status">Building…</p>',
    );
  });

  it('a build with a checked document shows the partial tree, busy, its buttons inert', () => {
    const markup = html(
      part({ state: 'streaming', appId: 'app_1', title: 'Open orders', document }),
      true,
      () => {},
    );
    expect(markup).toMatch(
      /^<div class="svc-app-part svc-app-part-building" data-service-app="app_1" aria-busy="true">/,
    );
    expect(markup).toContain('role="status">Building Open orders…</p>');
    expect(markup).toContain('<section class="svc-app" aria-label="Open orders">');
    expect(markup).toContain('<h2 class="svc-heading svc-heading-1">Orders</h2>');
    // Not saved yet: no action runs from the partial tree, even with a handler given.
    expect(markup).toMatch(/<button[^>]*disabled=""[^>]*>Refresh<\/button>/);
  });

  it('a final part is the app, its buttons live when a handler is given', () => {
    const markup = html(
      part({ state: 'final', appId: 'app_1', title: 'Open orders', version: 2, document }),
      false,
      () => {},
    );
    expect(markup).toMatch(
      /^<div class="svc-app-part" data-service-app="app_1"><section class="svc-app" aria-label="Open orders">/,
    );
    expect(markup).not.toContain('aria-busy');
    expect(markup).not.toContain('role="status"');
    expect(markup).toMatch(/<button(?![^>]*disabled)[^>]*>Refresh<\/button>/);
    // The same while the turn still streams: final is final.
    expect(
      html(part({ state: 'final', appId: 'app_1', title: 'Open orders', version: 2, document }), true),
    ).toContain('<h2 class="svc-heading svc-heading-1">Orders</h2>');
  });

  it('a failed part says why in words and paints nothing', () => {
    const markup = html(
      part({
        state: 'failed',
        appId: 'app_1',
        title: 'Open orders',
        reason: 'root.children[0]: unknown field "margin"',
      }),
      true,
    );
    expect(markup).toBe(
      '<div class="svc-app-part svc-app-part-failed" data-service-app="app_1">' +
        '<p class="svc-app-part-status">Open orders could not be built: root.children[0]: unknown field &quot;margin&quot;</p></div>',
    );
    expect(html(part({ state: 'failed', appId: 'app_1', title: null, reason: 'x' }), false)).toContain(
      'The app could not be built: x',
    );
  });

  it('a withdrawn part (a guessed preview the build did not use) shows nothing, streaming or not', () => {
    expect(appPartView(part({ state: 'withdrawn', appId: 'app_1' }), true)).toEqual({
      state: 'withdrawn',
      appId: 'app_1',
    });
    expect(html(part({ state: 'withdrawn', appId: 'app_1' }), true)).toBe('');
    expect(html(part({ state: 'withdrawn', appId: 'app_1' }), false)).toBe('');
  });

  it('a part left streaming after its turn ended is a failed build, never a spinner', () => {
    for (const doc of [null, document]) {
      const markup = html(
        part({ state: 'streaming', appId: 'app_1', title: 'Open orders', document: doc }),
        false,
      );
      expect(markup).toBe(
        '<div class="svc-app-part svc-app-part-failed" data-service-app="app_1">' +
          `<p class="svc-app-part-status">Open orders could not be built: ${STOPPED_BUILD_REASON}</p></div>`,
      );
      expect(markup).not.toContain('aria-busy');
      expect(markup).not.toContain('svc-app"');
    }
  });

  it('a tree cut off mid-way while the model writes it renders what is there, and never throws', () => {
    // What a preview of a half-written document can hold: props missing or half-written, an
    // unknown (cut-off) component name, children that are not nodes, a binding without its path.
    const truncated = {
      version: 1,
      title: 'Open ord',
      root: {
        component: 'Stack',
        children: [
          { component: 'Heading', props: { text: 'Orders' } },
          { component: 'Table', props: { rows: { $query: 'orders' }, columns: [{ field: 'id' }, {}] } },
          { component: 'Stat', props: { label: 'Open', value: { $query: 'ord' } } },
          { component: 'Button', props: { label: 'Refund', action: { type: 'tool' } } },
          { component: 'BarChart', props: { x: 'day' } },
          { component: 'Money' },
          { component: 'Ta' },
          { props: { text: 'no component yet' } },
          null,
          'Text',
          { component: 'Row', children: [{ component: 'Badge', props: { text: 'Ne' } }, { compo: 1 }] },
          { component: 'List', props: { items: 'not a list' } },
        ],
      },
    };
    for (const messageStreaming of [true, false]) {
      const markup = html(
        part({ state: 'streaming', appId: 'app_1', title: 'Open ord', document: truncated }),
        messageStreaming,
        () => {},
      );
      if (!messageStreaming) {
        expect(markup).toContain(STOPPED_BUILD_REASON);
        continue;
      }
      expect(markup).toContain('<h2 class="svc-heading svc-heading-1">Orders</h2>');
      expect(markup).toContain('Ne</span>');
      expect(markup).not.toContain('no component yet');
      expect(markup).toMatch(/<button[^>]*disabled=""[^>]*>Refund<\/button>/);
    }
    // Even the root itself cut off: a busy status with nothing painted.
    const rootless = html(
      part({ state: 'streaming', appId: 'app_1', title: null, document: { version: 1, title: '' } }),
      true,
    );
    expect(rootless).toContain('role="status">Building…</p>');
    expect(rootless).not.toContain('svc-app"');
  });

  it('a refused build: a new app ends on a short failed line, an edit keeps showing its last good version', () => {
    const preview = { state: 'streaming', appId: 'app_1', title: 'Open orders', document };
    // The parts one id takes in turn; the chat shows the last.
    const newBuild = [
      preview,
      { state: 'failed', appId: 'app_1', title: 'Open orders', reason: 'refused, nothing saved: no "total"' },
    ];
    const refusedNew = html(part(newBuild.at(-1)), false);
    expect(refusedNew).toBe(
      '<div class="svc-app-part svc-app-part-failed" data-service-app="app_1">' +
        '<p class="svc-app-part-status">Open orders could not be built: refused, nothing saved: no &quot;total&quot;</p></div>',
    );
    const lastGood = {
      ...document,
      title: 'Orders v1',
      root: { component: 'Heading', props: { text: 'Version one' } },
    };
    const edit = [
      preview,
      { state: 'final', appId: 'app_1', title: 'Orders v1', version: 1, document: lastGood },
    ];
    const refusedEdit = html(part(edit.at(-1)), false);
    expect(refusedEdit).toContain('>Version one</h2>');
    expect(refusedEdit).not.toContain('could not be built');
    expect(refusedEdit).not.toContain('>Orders</h2>');
    expect(refusedEdit).not.toContain('aria-busy');
  });

  it('malformed parts read as failed, never throw, never paint', () => {
    const cases: [unknown, string][] = [
      [undefined, 'the app could not be read'],
      ['final', 'the app could not be read'],
      [{ state: 'done' }, 'the app could not be read'],
      [{ state: 'final', appId: 'app_1' }, 'the app arrived without its screen'],
      [
        { state: 'final', appId: 'app_1', document: { title: 'x', root: 'Stack' } },
        'the app arrived without its screen',
      ],
      [{ state: 'failed', appId: 'app_1' }, 'no reason was given'],
    ];
    for (const [data, reason] of cases) {
      const markup = html(part(data), true);
      expect(markup).toContain(`could not be built: ${reason}</p>`);
      expect(markup).not.toContain('svc-app"');
    }
    // The part's own id stands in for a missing app id.
    expect(appPartView(part({ state: 'failed', reason: 'r' }, 'app_9'), false)).toEqual({
      state: 'failed',
      appId: 'app_9',
      title: null,
      reason: 'r',
    });
  });

  it('hostile strings are text in every state', () => {
    const hostileDoc: AppDocument = {
      version: 1,
      title: HOSTILE,
      root: { component: 'Text', props: { text: HOSTILE } },
    };
    const markups = [
      html(part({ state: 'streaming', appId: HOSTILE, title: HOSTILE, document: hostileDoc }), true),
      html(part({ state: 'final', appId: HOSTILE, title: HOSTILE, version: 1, document: hostileDoc }), false),
      html(part({ state: 'failed', appId: HOSTILE, title: HOSTILE, reason: HOSTILE }), false),
      html(part({ state: 'streaming', appId: HOSTILE, title: HOSTILE, document: hostileDoc }), false),
    ];
    for (const markup of markups) {
      expect(markup).not.toContain('<script');
      expect(markup).not.toContain('<img');
      expect(markup).toContain(ESCAPED);
    }
    expect(markups[2]).toContain(`${ESCAPED} could not be built: ${ESCAPED}</p>`);
  });
});
