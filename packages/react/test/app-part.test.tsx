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
