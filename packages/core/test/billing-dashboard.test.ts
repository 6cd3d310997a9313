import { sql } from 'kysely';
/**
 * Spend caps (enforced by the proxy, set on the dashboard) and the usage endpoints over real HTTP.
 *
 * @see docs/api/billing.md
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { type MeteredWorld, startMeteredWorld } from './support/metered.js';
import { type RunningPlatform, signedInOwner } from './support/platform.js';
import type { TestStore } from './support/stores.js';

describe('billing dashboard', () => {
  let world: MeteredWorld;
  let store: TestStore;
  let server: RunningPlatform;

  beforeAll(async () => {
    world = await startMeteredWorld();
    ({ store, server } = world);
  });
  afterAll(async () => world?.close());

  const session = (cookie: string) => ({
    get: (path: string) => fetch(`${server.url}${path}`, { headers: { cookie } }),
    put: (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'PUT',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
  });

  /** A signed-in owner with credit, an app bound to both providers, and its App Key. */
  const workspace = async (email: string, creditMicros = 1_000_000) => {
    const { cookie, tenantId, appId, appKey } = await signedInOwner(server, email);
    await post(store.db, {
      tenantId,
      amountMicros: creditMicros,
      kind: 'grant',
      idempotencyKey: `credit-${email}`,
    });
    for (const provider of ['llm', 'search']) {
      await fetch(`${server.url}/api/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider }),
      });
    }
    return { cookie, tenantId, appId, appKey, as: session(cookie) };
  };
  const search = async (appKey: string) => {
    const response = await fetch(`${server.url}/proxy/search/search`, {
      headers: { authorization: `Bearer ${appKey}` },
    });
    await response.arrayBuffer();
    return response;
  };
  const complete = async (appKey: string) => {
    const response = await fetch(`${server.url}/proxy/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-small' }),
    });
    await response.arrayBuffer();
    return response;
  };

  it('warns once per threshold, trips once, refuses the window with 402 naming it and its reset, and announces a new cap afresh', async () => {
    const ws = await workspace('caps@example.com');
    const set = await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: 3000,
      monthly_micros: null,
      warn_pcts: [50],
    });
    expect(set.status).toBe(200);
    expect((await set.json()).cap).toMatchObject({
      daily_micros: 3000,
      monthly_micros: null,
      warn_pcts: [50],
    });
    expect((await search(ws.appKey)).status).toBe(200); // 1200: 40 %
    expect((await search(ws.appKey)).status).toBe(200); // 2400: 80 %, warned at 50
    expect((await search(ws.appKey)).status).toBe(200); // 3600: tripped
    const refused = await search(ws.appKey);
    expect(refused.status).toBe(402);
    const { error } = await (
      await fetch(`${server.url}/proxy/search/search`, { headers: { authorization: `Bearer ${ws.appKey}` } })
    ).json();
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    expect(error).toMatchObject({
      code: 'spend_cap_exceeded',
      window: 'daily',
      resets_at: tomorrow.toISOString(),
    });
    expect(error.retry_after).toBeGreaterThan(0);
    await server.platform.context.metering.settled();
    const notices = await store.db
      .selectFrom('app_events')
      .select(['kind', 'payload'])
      .where('app_id', '=', ws.appId)
      .where('kind', 'like', 'billing.cap%')
      .orderBy('seq')
      .execute();
    expect(notices.map((n) => [n.kind, (n.payload as { window: string }).window])).toEqual([
      ['billing.cap_warned', 'daily'],
      ['billing.cap_tripped', 'daily'],
    ]);
    expect((notices[0]!.payload as { pct: number }).pct).toBe(50);
    const caps = await (await ws.as.get('/api/billing/spend-caps')).json();
    expect(caps.caps[0]).toMatchObject({
      app_id: ws.appId,
      spent: { daily_micros: 3600, monthly_micros: 3600 },
    });
    // Lifting the cap lets calls through again.
    await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: null,
      monthly_micros: null,
    });
    expect((await search(ws.appKey)).status).toBe(200); // 4800
    // A new cap in the same window announces its own thresholds: the old cap's notices are gone.
    await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: 6000,
      monthly_micros: null,
      warn_pcts: [50],
    });
    expect((await search(ws.appKey)).status).toBe(200); // 6000: warned at 50 and tripped
    expect((await search(ws.appKey)).status).toBe(402);
    await server.platform.context.metering.settled();
    const again = await store.db
      .selectFrom('app_events')
      .select('kind')
      .where('app_id', '=', ws.appId)
      .where('kind', 'like', 'billing.cap%')
      .orderBy('seq')
      .execute();
    expect(again.map((n) => n.kind)).toEqual([
      'billing.cap_warned',
      'billing.cap_tripped',
      'billing.cap_warned',
      'billing.cap_tripped',
    ]);
  });

  it('counts a Connection Key against the balance, never against a bound app’s cap', async () => {
    const ws = await workspace('caps-connection-key@example.com');
    const { connections } = await (await ws.as.get('/api/connections')).json();
    const connection = connections.find((c: { provider: string }) => c.provider === 'search');
    const minted = await fetch(`${server.url}/api/connections/${connection.id}/keys`, {
      method: 'POST',
      headers: { cookie: ws.cookie, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(minted.status).toBe(201);
    const { key: connectionKey } = await minted.json();
    await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: 1200,
      monthly_micros: null,
    });
    expect((await search(ws.appKey)).status).toBe(200); // 1200: tripped
    expect((await search(ws.appKey)).status).toBe(402);
    // The connection's key is no credential of the app: the cap does not refuse it.
    expect((await search(connectionKey)).status).toBe(200);
    expect((await search(connectionKey)).status).toBe(200);
    await server.platform.context.metering.settled();
    const caps = await (await ws.as.get('/api/billing/spend-caps')).json();
    expect(caps.caps[0].spent).toEqual({ daily_micros: 1200, monthly_micros: 1200 });
    const burn = await (await ws.as.get('/api/billing/burn-rate')).json();
    expect(burn.balance_micros).toBe(1_000_000 - 3 * 1200);
    // The app bound to the connection is still told of those calls.
    const recorded = await store.db
      .selectFrom('app_events')
      .select('payload')
      .where('app_id', '=', ws.appId)
      .where('kind', '=', 'billing.usage_recorded')
      .execute();
    const micros = recorded.reduce((sum, e) => sum + (e.payload as { micros: number }).micros, 0);
    expect(micros).toBe(3 * 1200);
  });

  it('validates spend caps and lets only owners set them', async () => {
    const ws = await workspace('caps-input@example.com');
    for (const body of [
      { app_id: ws.appId, daily_micros: -1, monthly_micros: null },
      { app_id: ws.appId, daily_micros: 1.5, monthly_micros: null },
      { app_id: ws.appId, daily_micros: '100', monthly_micros: null },
      { app_id: ws.appId },
      { app_id: ws.appId, daily_micros: 10, monthly_micros: null, warn_pcts: [150] },
    ]) {
      expect((await ws.as.put('/api/billing/spend-caps', body)).status).toBe(400);
    }
    // A daily cap above the monthly one could never be reached: refused, saying which.
    const inverted = await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: 50_000_000,
      monthly_micros: 5_000_000,
    });
    expect(inverted.status).toBe(400);
    expect(((await inverted.json()) as { message: string }).message).toContain(
      'daily_micros: must not be above monthly_micros',
    );
    const equal = await ws.as.put('/api/billing/spend-caps', {
      app_id: ws.appId,
      daily_micros: 5_000_000,
      monthly_micros: 5_000_000,
    });
    expect(equal.status).toBe(200);
    const other = await workspace('caps-other@example.com');
    expect(
      (
        await ws.as.put('/api/billing/spend-caps', {
          app_id: other.appId,
          daily_micros: 1,
          monthly_micros: null,
        })
      ).status,
    ).toBe(404);
    await store.db
      .updateTable('memberships')
      .set({ role: 'member' })
      .where('tenant_id', '=', ws.tenantId)
      .execute();
    expect(
      (
        await ws.as.put('/api/billing/spend-caps', {
          app_id: ws.appId,
          daily_micros: 1,
          monthly_micros: null,
        })
      ).status,
    ).toBe(403);
    expect((await fetch(`${server.url}/api/billing/spend-caps`)).status).toBe(401);
  });

  it('reports a deployment’s usage with numeric strings per period and meter, to owners only', async () => {
    const ws = await workspace('deploy-usage@example.com');
    await complete(ws.appKey);
    await complete(ws.appKey);
    await search(ws.appKey);
    const response = await ws.as.get(`/api/deployments/${ws.appId}/usage?range=1h`);
    expect(response.status).toBe(200);
    const usage = await response.json();
    expect(usage.summary).toMatchObject({ totalCost: 2 * 42 + 1200, events: 3, range: '1h', unit: 'micros' });
    expect(typeof usage.summary.totalCost).toBe('number');
    expect(usage.periods.length).toBeGreaterThanOrEqual(12);
    const busy = usage.periods.filter((p: { events: number }) => p.events > 0);
    const totalCost = busy.reduce((sum: number, p: { totalCost: string }) => sum + Number(p.totalCost), 0);
    expect(totalCost).toBe(2 * 42 + 1200);
    for (const period of usage.periods) expect(typeof period.totalCost).toBe('string');
    const meters = busy.flatMap((p: { meters: unknown[] }) => p.meters);
    expect(meters).toContainEqual({ provider: 'llm', meter: 'output_tokens', quantity: '40', cost: '72' });
    expect(meters).toContainEqual({ provider: 'search', meter: 'call', quantity: '1', cost: '1200' });
    expect(usage.providers).toContainEqual(
      expect.objectContaining({ provider: 'llm', events: 2, cost: '84' }),
    );
    // Without a range: the last 24 hours.
    const byDefault = await ws.as.get(`/api/deployments/${ws.appId}/usage`);
    expect(byDefault.status).toBe(200);
    expect((await byDefault.json()).summary).toMatchObject({
      range: '24h',
      totalCost: 2 * 42 + 1200,
      events: 3,
    });
    expect((await ws.as.get(`/api/deployments/${ws.appId}/usage?range=2h`)).status).toBe(400);
    const stranger = await workspace('deploy-stranger@example.com');
    expect((await stranger.as.get(`/api/deployments/${ws.appId}/usage`)).status).toBe(404);
    expect((await stranger.as.get('/api/deployments/not-a-uuid/usage')).status).toBe(404);
    // Not for deployed tools or SDKs: an App Key is not a session.
    const withKey = await fetch(`${server.url}/api/deployments/${ws.appId}/usage`, {
      headers: { authorization: `Bearer ${ws.appKey}` },
    });
    expect(withKey.status).toBe(401);
    await store.db
      .updateTable('memberships')
      .set({ role: 'member' })
      .where('tenant_id', '=', ws.tenantId)
      .execute();
    // Refused in the words of every billing route, the integration's usage included.
    for (const path of [`/api/deployments/${ws.appId}/usage`, '/api/integrations/llm/usage']) {
      const refused = await ws.as.get(path);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual({
        message: 'Forbidden: only workspace owners see and change billing',
        code: 'FORBIDDEN',
      });
    }
  });

  it('reports an integration’s 30-day trend and day, week and month spend', async () => {
    const ws = await workspace('integration-usage@example.com');
    await complete(ws.appKey);
    await search(ws.appKey);
    const llm = await (await ws.as.get('/api/integrations/llm/usage')).json();
    expect(llm.dailyTrend).toHaveLength(30);
    const today = new Date().toISOString().slice(0, 10);
    expect(llm.dailyTrend.at(-1)).toEqual({ date: today, events: 1, cost: 42 });
    expect(llm.provider).toMatchObject({ source: 'usage_events', input_tokens: 10, output_tokens: 20 });
    expect(llm.spend_daily_usd).toBe(0);
    const searchUsage = await (await ws.as.get('/api/integrations/search/usage')).json();
    expect(searchUsage.provider).toBeNull();
    expect(searchUsage).toMatchObject({ spend_daily_usd: 0, spend_weekly_usd: 0, spend_monthly_usd: 0 });
    expect(searchUsage.dailyTrend.at(-1)).toEqual({ date: today, events: 1, cost: 1200 });
    const unknown = await ws.as.get('/api/integrations/nope/usage');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: 'Not found' });
    const anonymous = await fetch(`${server.url}/api/integrations/llm/usage`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ message: 'Unauthorized' });
  });

  it('counts an integration’s day, week and month spend from the start of each, in UTC', async () => {
    const ws = await workspace('integration-windows@example.com');
    for (let i = 0; i < 4; i++) await search(ws.appKey);
    const now = new Date();
    const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const week = day - ((now.getUTCDay() + 6) % 7) * 86_400_000; // Monday
    const month = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const minute = 60_000;
    // One call now and one just before each window starts, each of its own cost in whole dollars.
    const calls = [
      { at: now.getTime(), micros: 1_000_000 },
      { at: day - minute, micros: 2_000_000 },
      { at: week - minute, micros: 4_000_000 },
      { at: month - minute, micros: 8_000_000 },
    ];
    // Settled in a batch a moment after the calls were answered.
    const settled = () =>
      store.db
        .selectFrom('usage_events')
        .select('id')
        .where('tenant_id', '=', ws.tenantId)
        .orderBy('id')
        .execute();
    await expect.poll(async () => (await settled()).length).toBe(4);
    for (const [i, row] of (await settled()).entries()) {
      // A call's time is never changed by the platform; the test moves it.
      await sql`update usage_events set created_at = ${new Date(calls[i]!.at)}, cost_micros = ${calls[i]!.micros} where id = ${row.id}`.execute(
        store.db,
      );
    }
    const since = (start: number) =>
      calls.filter((call) => call.at >= start).reduce((sum, call) => sum + call.micros, 0) / 1_000_000;
    const usage = await (await ws.as.get('/api/integrations/search/usage')).json();
    expect(usage).toMatchObject({
      spend_daily_usd: 1,
      spend_weekly_usd: since(week),
      spend_monthly_usd: since(month),
    });
  });

  it('rolls up tenant usage and the burn rate', async () => {
    const ws = await workspace('rollup@example.com');
    for (let i = 0; i < 3; i++) await search(ws.appKey);
    const usage = await (await ws.as.get('/api/billing/usage?days=7')).json();
    expect(usage.daily).toHaveLength(7);
    expect(usage).toMatchObject({ total_micros: 3600, events: 3 });
    expect(usage.by_provider).toEqual([{ provider: 'search', events: 3, cost_micros: 3600 }]);
    expect(usage.by_app).toEqual([{ app_id: ws.appId, app_slug: 'tool', events: 3, cost_micros: 3600 }]);
    expect((await ws.as.get('/api/billing/usage?days=0')).status).toBe(400);
    expect((await ws.as.get('/api/billing/usage?days=abc')).status).toBe(400);
    const burn = await (await ws.as.get('/api/billing/burn-rate')).json();
    expect(burn).toMatchObject({
      spent_last_hour_micros: 3600,
      spent_last_24h_micros: 3600,
      micros_per_hour: 150,
      balance_micros: 1_000_000 - 3600,
    });
    expect(burn.runway_hours).toBeCloseTo((1_000_000 - 3600) / 150, 0);
  });
});
