import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMeteredTenant,
  type MeteredTenant,
  type MeteredWorld,
  startMeteredWorld,
} from './support/metered.js';

// Every admitted metered call ends in exactly one of a bill or a release, whatever goes wrong
// after admission: the count of calls in flight (which a stop waits for) returns to zero and the
// books balance.

describe('metered calls in flight always end (pglite)', () => {
  let world: MeteredWorld;
  let tenant: MeteredTenant;
  const CREDIT = 10_000_000;
  beforeAll(async () => {
    world = await startMeteredWorld();
    tenant = await createMeteredTenant(world.server.platform, CREDIT);
  });
  afterAll(async () => world?.close());

  const metering = () => world.server.platform.context.metering;
  const body = JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }] });
  const until = async (done: () => boolean, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  /** Wallet, ledger and usage rows of the tenant: they must agree. */
  const books = async () => {
    await metering().settled();
    const { db } = world.store;
    const wallet = await db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    const ledger = await db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.sum<string>('amount_micros').as('sum'))
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    const usageAll = await db
      .selectFrom('usage_events')
      .select([(eb) => eb.fn.sum<string>('cost_micros').as('sum'), (eb) => eb.fn.countAll<string>().as('n')])
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    return {
      wallet: wallet.balance_micros,
      ledger: Number(ledger.sum),
      usage: Number(usageAll.sum ?? 0),
      calls: Number(usageAll.n),
    };
  };

  it('bills the hold of a call whose cost cannot be computed, and leaves nothing in flight', async () => {
    const before = await books();
    // Usage so large that its price leaves the safe integer range: building the bill throws.
    world.upstream.usage = { prompt_tokens: 1, completion_tokens: Number.MAX_SAFE_INTEGER };
    try {
      const response = await fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(200);
      await response.text();
    } finally {
      world.upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
    }
    await until(() => metering().callsInFlight === 0 && metering().unsettledCount === 0);
    expect(metering().callsInFlight).toBe(0);
    const after = await books();
    expect(after.calls).toBe(before.calls + 1);
    // What was held for it: billed as an estimate.
    const billed = before.wallet - after.wallet;
    expect(billed).toBeGreaterThan(0);
    expect(after.wallet).toBe(after.ledger);
    expect(CREDIT - after.ledger).toBe(after.usage);
    const row = await world.store.db
      .selectFrom('usage_events')
      .select(['cost_micros', 'estimated'])
      .where('tenant_id', '=', tenant.tenantId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ cost_micros: billed, estimated: true });
  });

  it('ends a call whose client is gone before its answer is written', async () => {
    const before = await books();
    const { port } = new URL(world.server.url);
    const upstreamCalls = world.upstream.requests.length;
    // The request, whole, then the connection closed at once: no one will read the answer.
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.end(
          [
            'POST /proxy/llm/v1/chat/completions HTTP/1.1',
            'host: 127.0.0.1',
            `authorization: Bearer ${tenant.appKey}`,
            'content-type: application/json',
            `content-length: ${Buffer.byteLength(body)}`,
            '',
            body,
          ].join('\r\n'),
        );
        socket.destroy();
        resolve();
      });
      socket.on('error', reject);
    });
    await until(() => world.upstream.requests.length > upstreamCalls);
    await until(() => metering().callsInFlight === 0 && metering().unsettledCount === 0);
    expect(metering().callsInFlight).toBe(0);
    const after = await books();
    expect(after.wallet).toBe(after.ledger);
    expect(CREDIT - after.ledger).toBe(after.usage);
    // Released (the upstream call was cut with the caller) or billed once.
    expect(after.calls - before.calls).toBeGreaterThanOrEqual(0);
    expect(after.calls - before.calls).toBeLessThanOrEqual(1);
  });

  it('ends a call whose answer is never read nor cancelled once its caller is gone', async () => {
    const before = await books();
    const caller = new AbortController();
    // The platform's fetch, as an adapter calls it: the caller's signal, and a response it drops.
    const response = await world.server.platform.fetch(
      new Request(`${world.server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
        body,
        signal: caller.signal,
      }),
    );
    expect(response.status).toBe(200);
    expect(metering().callsInFlight).toBe(1);
    caller.abort();
    await until(() => metering().callsInFlight === 0 && metering().unsettledCount === 0);
    expect(metering().callsInFlight).toBe(0);
    // The upstream answered: the call is billed once, for its hold (its usage was never read).
    const after = await books();
    expect(after.calls).toBe(before.calls + 1);
    expect(after.wallet).toBe(after.ledger);
    expect(CREDIT - after.ledger).toBe(after.usage);
  });
});
