/**
 * A chat message rendered on the server (react-dom/server) the way the page renders it: the app
 * the agent builds shows in place among the message's parts, and a build its turn outlived shows
 * as failed rather than busy.
 */
import type { UIMessage } from 'ai';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { MessageView } from '../src/message-view';
import type { ApprovalActions } from '../src/tool-card';

const actions: ApprovalActions = {
  approve: async () => {},
  deny: async () => {},
  alwaysAllow: async () => {},
};

const document = {
  version: 1,
  title: 'Open orders',
  root: { component: 'Text', props: { text: 'Two orders are open.' } },
};

function message(data: Record<string, unknown>): UIMessage {
  return {
    id: 'm1',
    role: 'assistant',
    parts: [
      { type: 'text', text: 'Here it is.' },
      { type: 'data-service-app', id: 'app_1', data: { appId: 'app_1', title: 'Open orders', ...data } },
    ],
  };
}

function html(m: UIMessage, streaming: boolean): string {
  return renderToStaticMarkup(createElement(MessageView, { message: m, streaming, actions }));
}

describe('a message with an app part', () => {
  it('shows the finished app after the message text', () => {
    const markup = html(message({ state: 'final', version: 1, document }), false);
    expect(markup).toContain(
      '<p class="message-text" dir="auto">Here it is.</p><div class="svc-app-part" data-service-app="app_1">' +
        '<section class="svc-app" aria-label="Open orders"><p class="svc-text svc-tone-default">Two orders are open.</p></section></div>',
    );
  });

  it('shows a build as busy while its message streams', () => {
    const markup = html(message({ state: 'streaming', document: null }), true);
    expect(markup).toContain(
      'aria-busy="true"><p class="svc-app-part-status" role="status">Building Open orders…</p>',
    );
  });

  it('shows a build its message outlived as failed, with no spinner', () => {
    const markup = html(message({ state: 'streaming', document }), false);
    expect(markup).not.toContain('aria-busy');
    expect(markup).not.toContain('Two orders are open.');
    expect(markup).toContain('Open orders could not be built: the build stopped before it finished');
  });

  it('shows a refused build’s reason in words', () => {
    const markup = html(
      message({ state: 'failed', reason: 'the tool list_orders is not one of the host’s' }),
      false,
    );
    expect(markup).toContain('Open orders could not be built: the tool list_orders is not one of the host’s');
  });
});
