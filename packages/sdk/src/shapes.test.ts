import {
  billingBalanceSchema,
  LEGACY_EVENT_ALIASES as SERVER_ALIASES,
  SERVICE_ERROR_CODES as SERVER_CODES,
  SERVICE_EVENT_KINDS as SERVER_KINDS,
  serviceEventSchema,
} from '@service/core/schemas';
import { describe, expect, it } from 'vitest';
import {
  isBillingBalance,
  isServiceEvent,
  LEGACY_EVENT_ALIASES,
  SERVICE_ERROR_CODES,
  SERVICE_EVENT_KINDS,
} from './shapes.js';

/** The hand-narrowed checks agree with the server's own schemas on what they accept. */
describe('shapes', () => {
  it('carries the server constants unchanged', () => {
    expect(SERVICE_EVENT_KINDS).toEqual(SERVER_KINDS);
    expect(LEGACY_EVENT_ALIASES).toEqual(SERVER_ALIASES);
    expect(SERVICE_ERROR_CODES).toEqual(SERVER_CODES);
  });

  const base = { id: '7', at: '2030-01-01T00:00:00.000Z' };
  const connection = { ...base, slug: 'github', connection_id: 'c1' };
  const events: unknown[] = [
    { ...connection, kind: 'connection.connected' },
    { ...connection, kind: 'connection.disconnected' },
    { ...connection, kind: 'connection.changed' },
    { ...connection, kind: 'connection.status_changed', status: 'needs_reauth' },
    { ...connection, kind: 'connection.status_changed', status: 'sleeping' },
    { ...base, kind: 'billing.usage_recorded', provider: 'llm', micros: 12 },
    { ...base, kind: 'billing.usage_recorded', provider: 'llm', micros: 1.5 },
    { ...base, kind: 'billing.balance_changed', remaining_micros: 5 },
    { ...base, kind: 'billing.balance_changed', remaining_micros: '5' },
    { ...base, kind: 'billing.cap_warned', window: 'daily', pct: 80 },
    { ...base, kind: 'billing.cap_warned', window: 'weekly', pct: 80 },
    { ...base, kind: 'billing.cap_tripped', window: 'monthly' },
    { ...base, kind: 'toString' },
    { ...base, kind: 'something.new' },
    { kind: 'connection.connected', slug: 'github', connection_id: 'c1' },
    null,
    [],
  ];

  it('accepts exactly the events the server schema accepts', () => {
    for (const event of events) {
      expect(isServiceEvent(event), JSON.stringify(event)).toBe(serviceEventSchema.safeParse(event).success);
    }
  });

  it('accepts exactly the balances the server schema accepts', () => {
    const ok = { credits_remaining_micros: 5, currency: 'USD', top_up_url: 'https://x/billing' };
    for (const balance of [
      ok,
      { ...ok, currency: 'EUR' },
      { ...ok, credits_remaining_micros: -1 },
      { ...ok, top_up_url: 1 },
      {},
    ]) {
      expect(isBillingBalance(balance)).toBe(billingBalanceSchema.safeParse(balance).success);
    }
  });
});
