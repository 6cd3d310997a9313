/**
 * Organizations over the wire with a source (a test stand-in for the host's or the platform's
 * workspaces): listing, members, switching, and requests in an organization's workspace acting
 * as `service:org:<id>`, shared by its members and closed to others. Without a source, the
 * family is 402 before the principal is resolved.
 *
 * @see docs/wire.md "Organizations"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/agent/tools.js';
import type { Service } from '../../src/wire/create-service.js';
import type { WireOrgMember, WireOrgs } from '../../src/wire/orgs.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { reactiveModel } from './support/models.js';
import { type Caller, callerFor, readTurn, testService } from './support/wire.js';

const MEMBERS: Record<string, WireOrgMember[]> = {
  acme: [
    { subject: 'ada', name: 'Ada', email: 'ada@acme.test', role: 'owner' },
    { subject: 'bob', name: 'Bob', email: 'bob@acme.test', role: 'member' },
  ],
};

const orgs: WireOrgs = {
  kind: 'byo',
  list: async (user: Principal) =>
    Object.entries(MEMBERS).flatMap(([id, members]) => {
      const me = members.find((m) => m.subject === user.subject);
      return me ? [{ id, name: id.toUpperCase(), role: me.role }] : [];
    }),
  members: async (user: Principal, orgId: string) => {
    const members = MEMBERS[orgId];
    return members?.some((m) => m.subject === user.subject) ? members : null;
  },
};

for (const kind of STORE_KINDS) {
  describe(`wire organizations (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let ada: Caller;
    let bob: Caller;
    let cy: Caller;
    const seenBy: Principal[] = [];

    beforeAll(async () => {
      store = await openTestStore(kind);
      let calls = 0;
      const model = reactiveModel((options) =>
        options.prompt.at(-1)?.role === 'tool'
          ? { text: ['Done.'] }
          : { toolCalls: [{ id: `c${++calls}`, name: 'whoami', input: {} }] },
      );
      service = await testService(store, {
        orgs,
        model,
        tools: [
          {
            name: 'whoami',
            description: 'Who am I',
            input: { type: 'object', properties: {} },
            risk: 'read',
            execute: (_input: unknown, context: { principal: Principal }) => {
              seenBy.push(context.principal);
              return { ok: true };
            },
          },
        ],
      });
      ada = callerFor((r) => service.fetch(r), 'ada');
      bob = callerFor((r) => service.fetch(r), 'bob');
      cy = callerFor((r) => service.fetch(r), 'cy');
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    it('reports orgs in /status and lists the user’s organizations and members', async () => {
      const status = (await (await ada('/status')).json()) as { blocks: { orgs: unknown } };
      expect(status.blocks.orgs).toBe(true);
      expect(await (await ada('/orgs')).json()).toEqual({
        orgs: [{ id: 'acme', name: 'ACME', role: 'owner' }],
        current: null,
      });
      expect(await (await cy('/orgs')).json()).toEqual({ orgs: [], current: null });
      expect(await (await bob('/orgs/acme')).json()).toEqual({
        org: { id: 'acme', name: 'ACME', role: 'member' },
      });
      const members = (await (await bob('/orgs/acme/members')).json()) as { members: WireOrgMember[] };
      expect(members.members.map((m) => m.subject)).toEqual(['ada', 'bob']);
      expect((await cy('/orgs/acme')).status).toBe(404);
      expect((await cy('/orgs/acme/members')).status).toBe(404);
    });

    it('runs an organization workspace as service:org:<id>, shared by members, closed to others', async () => {
      const switched = await ada('/orgs/switch', { method: 'POST', json: { org: 'acme' } });
      expect(await switched.json()).toEqual({ current: 'acme' });
      expect(((await (await ada('/orgs')).json()) as { current: string }).current).toBe('acme');

      const turn = await ada('/chat', { method: 'POST', json: { id: 'team-thread', message: 'hi team' } });
      expect(turn.status).toBe(200);
      await readTurn(turn);
      expect(seenBy.at(-1)).toMatchObject({
        subject: 'service:org:acme',
        kind: 'org',
        orgId: 'acme',
        actor: 'ada',
      });
      const row = await store.db
        .selectFrom('wire_threads')
        .select('owner')
        .where('id', '=', 'team-thread')
        .executeTakeFirstOrThrow();
      expect(row.owner).toBe('service:org:acme');
      // The run is the organization's, and records the member who asked as its actor.
      const run = await store.db
        .selectFrom('wire_runs')
        .select(['owner', 'actor', 'trigger'])
        .where('thread_id', '=', 'team-thread')
        .executeTakeFirstOrThrow();
      expect(run).toEqual({ owner: 'service:org:acme', actor: 'ada', trigger: 'chat' });

      // Bob works in the same workspace by ?org= without switching; his own list does not show it.
      const shared = (await (await bob('/threads?org=acme')).json()) as { threads: { id: string }[] };
      expect(shared.threads.map((t) => t.id)).toEqual(['team-thread']);
      expect(((await (await bob('/threads')).json()) as { threads: unknown[] }).threads).toEqual([]);
      // Cy is no member: asking for the workspace is a 404, switching to it too.
      expect((await cy('/threads?org=acme')).status).toBe(404);
      expect((await cy('/orgs/switch', { method: 'POST', json: { org: 'acme' } })).status).toBe(404);

      // Back to her own workspace: the team thread is not hers.
      await ada('/orgs/switch', { method: 'POST', json: { org: null } });
      expect(((await (await ada('/threads')).json()) as { threads: unknown[] }).threads).toEqual([]);
    });

    it('lets ?org= through to approvals and grants, and checks a body org against it', async () => {
      expect((await ada('/approvals?org=acme')).status).toBe(200);
      expect((await ada('/grants?org=acme')).status).toBe(200);
      const mismatch = await ada('/approvals/decide?org=acme', {
        method: 'POST',
        json: { org: 'other', decisions: [{ id: 'apr_x', decision: 'approve' }] },
      });
      expect(mismatch.status).toBe(400);
      expect(((await mismatch.json()) as { error: { message: string } }).error.message).toContain('body.org');
    });

    it('refuses bad switch bodies with 400', async () => {
      for (const json of [{}, { org: 5 }, { org: 'no spaces' }]) {
        const answer = await ada('/orgs/switch', { method: 'POST', json });
        expect(answer.status, JSON.stringify(json)).toBe(400);
      }
    });
  });
}

describe('wire organizations without a source', () => {
  it('answers 402 cloud_required before resolving the principal, and /status says false', async () => {
    const store = await openTestStore('pglite');
    let resolved = 0;
    const service = await testService(store, {
      principal: () => {
        resolved++;
        return { subject: 'ada' };
      },
    });
    try {
      const anyone = callerFor((r) => service.fetch(r), null);
      for (const path of ['/orgs', '/orgs/acme/members', '/orgs/switch']) {
        const answer = await anyone(path);
        expect(answer.status).toBe(402);
        expect(answer.headers.get('service-error-code')).toBe('cloud_required');
      }
      expect(resolved).toBe(0);
      const status = (await (await anyone('/status')).json()) as { blocks: { orgs: unknown } };
      expect(status.blocks.orgs).toBe(false);
    } finally {
      await service.close();
      await store.dispose();
    }
  });
});
