/**
 * Connections over the wire with the host's own source (`kind: 'byo'`): a test source that
 * behaves like a host's OAuth-backed store (pending until the provider's flow comes back to the
 * host's callback). Catalog, initiate with the host's `callbackUrl`, polling, list, disconnect,
 * per-user isolation and `/status`.
 *
 * @see docs/wire.md "Connections"
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/agent/tools.js';
import type { WireConnection, WireConnections } from '../../src/wire/connections.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type Caller, callerFor, testService } from './support/wire.js';

/** A host's own connections: rows per user, a state per flow in flight, completed by the host's callback. */
class TestConnections implements WireConnections {
  readonly kind = 'byo' as const;
  readonly rows = new Map<string, WireConnection & { owner: string }>();
  readonly flows = new Map<string, { id: string; callbackUrl: string }>();

  async catalog() {
    return [
      { provider: 'acme-crm', name: 'Acme CRM', description: 'Customers', category: 'crm', logoUrl: null },
    ];
  }
  async list(principal: Principal) {
    return [...this.rows.values()]
      .filter((row) => row.owner === principal.subject && row.status !== 'revoked')
      .map(({ owner: _owner, ...row }) => row);
  }
  async initiate(principal: Principal, input: { provider: string; callbackUrl: string }) {
    if (input.provider !== 'acme-crm') return null;
    const now = new Date().toISOString();
    const id = `con_${randomBytes(8).toString('hex')}`;
    const row = {
      id,
      owner: principal.subject,
      provider: input.provider,
      status: 'pending' as const,
      displayName: null,
      error: null,
      createdAt: now,
      updatedAt: now,
    };
    this.rows.set(id, row);
    const state = randomBytes(16).toString('hex');
    this.flows.set(state, { id, callbackUrl: input.callbackUrl });
    const authorizeUrl = `https://acme.test/authorize?state=${state}&redirect_uri=${encodeURIComponent(input.callbackUrl)}`;
    const { owner: _owner, ...connection } = row;
    return { connection, authorizeUrl };
  }
  async get(principal: Principal, id: string) {
    const row = this.rows.get(id);
    if (!row || row.owner !== principal.subject) return null;
    const { owner: _owner, ...connection } = row;
    return connection;
  }
  async disconnect(principal: Principal, id: string) {
    const row = this.rows.get(id);
    if (!row || row.owner !== principal.subject) return null;
    row.status = 'revoked';
    return this.get(principal, id);
  }
  /** What the host's callback page does when the provider sends the browser back. */
  complete(state: string, displayName: string) {
    const flow = this.flows.get(state);
    if (!flow) throw new Error('unknown state');
    this.flows.delete(state);
    const row = this.rows.get(flow.id)!;
    Object.assign(row, { status: 'connected', displayName, updatedAt: new Date().toISOString() });
  }
}

for (const kind of STORE_KINDS) {
  describe(`wire connections (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let source: TestConnections;
    let ada: Caller;
    let bob: Caller;

    beforeAll(async () => {
      store = await openTestStore(kind);
      source = new TestConnections();
      service = await testService(store, { connections: source, baseUrl: 'https://host.test/app' });
      ada = callerFor((r) => service.fetch(r), 'ada');
      bob = callerFor((r) => service.fetch(r), 'bob');
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    it('reports its source in /status', async () => {
      const status = (await (await ada('/status')).json()) as { blocks: { connections: unknown } };
      expect(status.blocks.connections).toBe('byo');
    });

    it('answers the catalog at its literal path', async () => {
      const answer = await ada('/connections/catalog');
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({
        providers: [
          {
            provider: 'acme-crm',
            name: 'Acme CRM',
            description: 'Customers',
            category: 'crm',
            logoUrl: null,
          },
        ],
      });
    });

    it('initiates with the host callback, is polled until connected, listed, and disconnected', async () => {
      const started = await ada('/connections', {
        method: 'POST',
        json: { provider: 'acme-crm', callbackUrl: 'https://host.test/app/connected' },
      });
      expect(started.status).toBe(201);
      const { connection, authorizeUrl } = (await started.json()) as {
        connection: WireConnection;
        authorizeUrl: string;
      };
      expect(connection).toMatchObject({ provider: 'acme-crm', status: 'pending' });
      const redirect = new URL(authorizeUrl);
      expect(redirect.searchParams.get('redirect_uri')).toBe('https://host.test/app/connected');

      const pending = await ada(`/connections/${connection.id}`);
      expect(pending.headers.get('cache-control')).toBe('no-store');
      expect(((await pending.json()) as { connection: WireConnection }).connection.status).toBe('pending');

      source.complete(redirect.searchParams.get('state')!, 'ada@acme.test');
      const polled = (await (await ada(`/connections/${connection.id}`)).json()) as {
        connection: WireConnection;
      };
      expect(polled.connection).toMatchObject({ status: 'connected', displayName: 'ada@acme.test' });

      const list = (await (await ada('/connections')).json()) as { connections: WireConnection[] };
      expect(list.connections.map((c) => c.id)).toEqual([connection.id]);

      const gone = await ada(`/connections/${connection.id}`, { method: 'DELETE', json: {} });
      expect(gone.status).toBe(200);
      expect(((await gone.json()) as { connection: WireConnection }).connection.status).toBe('revoked');
      expect(((await (await ada('/connections')).json()) as { connections: unknown[] }).connections).toEqual(
        [],
      );
    });

    it("keeps each user's connections to themselves", async () => {
      const started = await ada('/connections', {
        method: 'POST',
        json: { provider: 'acme-crm', callbackUrl: 'https://host.test/app/connected' },
      });
      const { connection } = (await started.json()) as { connection: WireConnection };
      expect((await bob(`/connections/${connection.id}`)).status).toBe(404);
      expect((await bob(`/connections/${connection.id}`, { method: 'DELETE', json: {} })).status).toBe(404);
      expect(((await (await bob('/connections')).json()) as { connections: unknown[] }).connections).toEqual(
        [],
      );
      expect(source.rows.get(connection.id)?.status).toBe('pending');
    });

    it('refuses callbacks off the host origin, unknown providers and bad input with clear 4xx', async () => {
      const cases: [unknown, number, string][] = [
        [{ provider: 'acme-crm', callbackUrl: 'https://evil.test/steal' }, 400, "host's origin"],
        [{ provider: 'acme-crm', callbackUrl: 'https://user:pw@host.test/app/x' }, 400, 'no credentials'],
        [{ provider: 'acme-crm', callbackUrl: 'javascript:alert(1)' }, 400, 'body.callbackUrl'],
        [{ provider: 'acme-crm' }, 400, 'body.callbackUrl'],
        [{ provider: 'Not A Slug', callbackUrl: 'https://host.test/app/x' }, 400, 'body.provider'],
        [{ provider: 'nope', callbackUrl: 'https://host.test/app/x' }, 404, 'No such provider'],
      ];
      for (const [json, status, message] of cases) {
        const answer = await ada('/connections', { method: 'POST', json });
        expect(answer.status, JSON.stringify(json)).toBe(status);
        expect(((await answer.json()) as { error: { message: string } }).error.message).toContain(message);
      }
      expect((await ada('/connections/no%20such')).status).toBe(404);
      expect((await callerFor((r) => service.fetch(r), null)('/connections')).status).toBe(403);
    });
  });
}

describe('wire connections without a source', () => {
  it('answers 501 not_implemented and /status says false', async () => {
    const store = await openTestStore('pglite');
    const service = await testService(store);
    try {
      const ada = callerFor((r) => service.fetch(r), 'ada');
      expect((await ada('/connections')).status).toBe(501);
      expect((await ada('/connections', { method: 'POST', json: {} })).status).toBe(501);
      const status = (await (await ada('/status')).json()) as { blocks: { connections: unknown } };
      expect(status.blocks.connections).toBe(false);
    } finally {
      await service.close();
      await store.dispose();
    }
  });

  it('refuses a malformed source when composing', async () => {
    const store = await openTestStore('pglite');
    try {
      await expect(testService(store, { connections: { kind: 'mine' } as never })).rejects.toThrow(
        /connections must be a connections source/,
      );
    } finally {
      await store.dispose();
    }
  });
});
