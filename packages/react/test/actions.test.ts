/**
 * What a Kit button does when pressed: asks first when the document says so, applies setState,
 * resolves a tool input's bindings at the press, hands the action to the host, and turns the
 * host's failure into words.
 */
import { describe, expect, it } from 'vitest';
import { type ActionRunner, type AppAction, actionOf, runAction } from '../src/index.js';

function runner(overrides: Partial<ActionRunner> = {}) {
  const seen = {
    actions: [] as AppAction[],
    state: {} as Record<string, unknown>,
    busy: [] as boolean[],
    asked: [] as string[],
  };
  const run: ActionRunner = {
    scope: { queries: { orders: { items: [{ id: 'ord_1' }, { id: 'ord_2' }] } }, state: { note: 'late' } },
    setState: (key, value) => {
      seen.state[key] = value;
    },
    onAction: (action) => {
      seen.actions.push(action);
    },
    ask: (question) => {
      seen.asked.push(question);
      return true;
    },
    busy: (on) => {
      seen.busy.push(on);
    },
    ...overrides,
  };
  return { run, seen };
}

describe('a pressed button', () => {
  it('calls the host’s tool with its input’s bindings resolved at the press, busy meanwhile', async () => {
    const { run, seen } = runner();
    const action = actionOf({
      type: 'tool',
      tool: 'refund_order',
      input: { id: { $query: 'orders', path: 'items[1].id' }, reason: { $state: 'note' }, notify: true },
    });
    expect(await runAction(action!, '', run)).toBeNull();
    expect(seen.actions).toEqual([
      { type: 'tool', tool: 'refund_order', input: { id: 'ord_2', reason: 'late', notify: true } },
    ]);
    expect(seen.busy).toEqual([true, false]);
    expect(seen.asked).toEqual([]);
  });

  it('sets local state, and tells the host', async () => {
    const { run, seen } = runner();
    expect(await runAction(actionOf({ type: 'setState', key: 'tab', value: 'paid' })!, '', run)).toBeNull();
    expect(seen.state).toEqual({ tab: 'paid' });
    expect(seen.actions).toEqual([{ type: 'setState', key: 'tab', value: 'paid' }]);
    expect(seen.busy).toEqual([]);
  });

  it('asks first when the document says so, and does nothing on a no', async () => {
    const { run, seen } = runner({ ask: () => false });
    const refund = actionOf({ type: 'tool', tool: 'refund_order' })!;
    expect(await runAction(refund, 'Refund this order?', run)).toBeNull();
    expect(seen.actions).toEqual([]);

    const yes = runner();
    await runAction(refund, 'Refund this order?', yes.run);
    expect(yes.seen.asked).toEqual(['Refund this order?']);
    expect(yes.seen.actions).toEqual([{ type: 'tool', tool: 'refund_order', input: {} }]);
  });

  it('answers the host’s failure in words, and is no longer busy', async () => {
    const { run, seen } = runner({
      onAction: async () => {
        throw new Error('Approval required: refund_order');
      },
    });
    expect(await runAction(actionOf({ type: 'tool', tool: 'refund_order' })!, '', run)).toBe(
      'Approval required: refund_order',
    );
    expect(seen.busy).toEqual([true, false]);
    const odd = runner({
      onAction: () => {
        throw 'not an error';
      },
    });
    expect(await runAction(actionOf({ type: 'setState', key: 'k', value: 1 })!, '', odd.run)).toBe(
      'The action failed.',
    );
  });

  it('knows only the Kit’s two actions', () => {
    expect(actionOf({ type: 'eval', code: 'x' })).toBeNull();
    expect(actionOf({ type: 'tool' })).toBeNull();
    expect(actionOf({ type: 'setState', key: 5 })).toBeNull();
    expect(actionOf(null)).toBeNull();
    expect(actionOf('tool')).toBeNull();
  });
});
