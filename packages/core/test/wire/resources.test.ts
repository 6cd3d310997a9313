/**
 * Threads, approvals, grants and activity over the wire, per user: each sees only their own.
 *
 * @see docs/wire.md "Threads", "Approvals and grants", "Activity"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AuditLog } from '../../src/agent/audit.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { lastUserText, reactiveModel, scriptedModel } from './support/models.js';
import {
  callerFor,
  eventually,
  readTurn,
  readUntilPaused,
  resumeAfter,
  TurnReader,
  testService,
} from './support/wire.js';

for (const kind of STORE_KINDS) {
  describe(`wire resources (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let transfers = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      // Every turn: a transfer call (seven when asked for seven, else five), then text.
      let calls = 0;
      const model = reactiveModel((options) =>
        options.prompt.at(-1)?.role === 'tool'
          ? { text: ['Done.'] }
          : {
              toolCalls: [
                {
                  id: `c${++calls}`,
                  name: 'transfer',
                  input: { amount: lastUserText(options).includes('seven') ? 7 : 5 },
                },
              ],
            },
      );
      service = await testService(store, {
        model,
        tools: [
          {
            name: 'transfer',
            description: 'Moves money',
            input: z.object({ amount: z.number() }),
            risk: 'write',
            needsApproval: true,
            execute: ({ amount }: { amount: number }) => {
              transfers++;
              return { moved: amount };
            },
          },
        ],
      });
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    const ada = () => callerFor(service.fetch, `ada-${kind}`);
    const bob = () => callerFor(service.fetch, `bob-${kind}`);

    /** A turn whose stream ended at its pause; `rest()` reads on from there once it is decided. */
    async function parkedTurn(threadId: string, message: string) {
      const response = await ada()('/chat', { method: 'POST', json: { id: threadId, message } });
      const paused = await readUntilPaused(new TurnReader(response));
      return {
        approvalId: paused.approvalIds[0]!,
        rest: () => resumeAfter(ada(), threadId, paused.resumeAfter),
      };
    }

    it('lists, reads and deletes threads, and keeps them per user', async () => {
      const { rest, approvalId } = await parkedTurn('t-list', 'Please move five');
      await ada()(`/approvals/${approvalId}/decide`, { method: 'POST', json: { decision: 'approve' } });
      await rest();

      const list = await (await ada()('/threads')).json();
      expect(list.threads).toEqual([
        expect.objectContaining({ id: 't-list', title: 'Please move five', createdAt: expect.any(String) }),
      ]);
      expect(list.nextBefore).toBeNull();
      expect((await (await bob()('/threads')).json()).threads).toEqual([]);
      expect((await bob()('/threads/t-list')).status).toBe(404);
      expect((await bob()('/threads/t-list', { method: 'DELETE', json: {} })).status).toBe(404);
      expect((await bob()(`/approvals/${approvalId}`)).status).toBe(404);

      const detail = await (await ada()('/threads/t-list')).json();
      expect(detail.thread.messages).toHaveLength(2);
      expect(detail.thread.latestRun.status).toBe('completed');

      const deleted = await ada()('/threads/t-list', { method: 'DELETE', json: {} });
      expect(await deleted.json()).toEqual({ deleted: true, id: 't-list' });
      expect((await ada()('/threads/t-list')).status).toBe(404);
      expect((await (await ada()('/threads')).json()).threads).toEqual([]);
    });

    it('lets two users use the same client thread id without seeing each other', async () => {
      const { model } = scriptedModel([{ text: ['private'] }]);
      const other = await testService(store, { model });
      try {
        await readTurn(
          await callerFor(other.fetch, `carol-${kind}`)('/chat', {
            method: 'POST',
            json: { id: 'same', message: 'carol' },
          }),
        );
        await readTurn(
          await callerFor(other.fetch, `dave-${kind}`)('/chat', {
            method: 'POST',
            json: { id: 'same', message: 'dave' },
          }),
        );
        const carol = await (await callerFor(other.fetch, `carol-${kind}`)('/threads/same')).json();
        expect(carol.thread.title).toBe('carol');
        expect(JSON.stringify(carol.thread.messages)).not.toContain('dave');
      } finally {
        await other.close();
      }
    });

    it('takes remember: true ("always allow") on both decide routes, as a tool grant for a day, and false as none', async () => {
      const toolGrants = async () => {
        const { grants } = (await (await ada()('/grants')).json()) as {
          grants: Array<Record<string, unknown>>;
        };
        for (const grant of grants) await ada()(`/grants/${grant.id}`, { method: 'DELETE', json: {} });
        return grants.filter((g) => g.tool === 'transfer' && g.scope === 'tool');
      };
      const one = await parkedTurn('t-remember-one', 'move one');
      const single = await ada()(`/approvals/${one.approvalId}/decide`, {
        method: 'POST',
        json: { decision: 'approve', remember: true },
      });
      expect(single.status).toBe(200);
      await one.rest();
      expect(await toolGrants()).toHaveLength(1);

      const two = await parkedTurn('t-remember-two', 'move two');
      const batch = await ada()('/approvals/decide', {
        method: 'POST',
        json: { decisions: [{ id: two.approvalId, decision: 'approve', remember: true }] },
      });
      expect(batch.status).toBe(200);
      await two.rest();
      expect(await toolGrants()).toHaveLength(1);

      // remember: false is "don't remember": approved, no grant.
      const three = await parkedTurn('t-remember-not', 'move three');
      const once = await ada()(`/approvals/${three.approvalId}/decide`, {
        method: 'POST',
        json: { decision: 'approve', remember: false },
      });
      expect(once.status).toBe(200);
      expect((await once.json()).grants).toEqual([]);
      await three.rest();
      expect(await toolGrants()).toEqual([]);
    });

    it('refuses a decision with a field it does not know or a remember it cannot read, naming it, and decides nothing', async () => {
      const parked = await parkedTurn('t-decide-refusals', 'move one');
      const refusals: Array<[string, unknown, string]> = [
        [
          `/approvals/${parked.approvalId}/decide`,
          { decision: 'approve', remeber: true },
          'body: Unrecognized key: "remeber"',
        ],
        [
          '/approvals/decide',
          { decisions: [{ id: parked.approvalId, decision: 'approve', always: true }] },
          'body.decisions.0: Unrecognized key: "always"',
        ],
        [
          '/approvals/decide',
          { decisions: [{ id: parked.approvalId, decision: 'approve' }], dryRun: true },
          'body: Unrecognized key: "dryRun"',
        ],
        [
          `/approvals/${parked.approvalId}/decide`,
          { decision: 'approve', remember: { scope: 'forever' } },
          'body.remember.scope: ',
        ],
        [
          `/approvals/${parked.approvalId}/decide`,
          { decision: 'approve', remember: { ttlSeconds: 5 } },
          'body.remember.ttlSeconds: ',
        ],
        [
          `/approvals/${parked.approvalId}/decide`,
          { decision: 'approve', remember: 'yes' },
          'body.remember: must be true, false or { scope, ttlSeconds }',
        ],
      ];
      for (const [path, json, message] of refusals) {
        const answer = await ada()(path, { method: 'POST', json });
        expect(answer.status, JSON.stringify(json)).toBe(400);
        const { error } = (await answer.json()) as { error: { code: string; message: string } };
        expect(error.code).toBe('validation_failed');
        expect(error.message.startsWith(message), error.message).toBe(true);
      }
      const { approval } = (await (await ada()(`/approvals/${parked.approvalId}`)).json()) as {
        approval: { status: string; request?: unknown };
      };
      expect(approval.status).toBe('pending');
      expect(approval.request).toBeDefined();
      // A denial through the API may say why, as one from useChat does: the model is told.
      const decided = await ada()(`/approvals/${parked.approvalId}/decide`, {
        method: 'POST',
        json: { decision: 'deny', reason: ' Not today. ' },
      });
      expect(decided.status).toBe(200);
      await parked.rest();
      const thread = await (await ada()('/threads/t-decide-refusals')).text();
      expect(thread).toContain('"reason":"Not today."');
    });

    it('decides a batch all or nothing, remembers an approval as a grant, and honours and revokes it', async () => {
      const first = await parkedTurn('t-grant', 'move five');
      // A batch naming an unknown approval changes nothing.
      const bad = await ada()('/approvals/decide', {
        method: 'POST',
        json: {
          decisions: [
            { id: first.approvalId, decision: 'approve' },
            { id: 'apr_unknown', decision: 'deny' },
          ],
        },
      });
      expect(bad.status).toBe(404);
      expect((await (await ada()(`/approvals/${first.approvalId}`)).json()).approval.status).toBe('pending');

      const decided = await ada()('/approvals/decide', {
        method: 'POST',
        json: {
          decisions: [
            { id: first.approvalId, decision: 'approve', remember: { scope: 'input', ttlSeconds: 3600 } },
          ],
        },
      });
      expect(decided.status).toBe(200);
      const body = await decided.json();
      expect(body.grants).toEqual([
        expect.objectContaining({ id: expect.stringMatching(/^grt_/), tool: 'transfer', scope: 'input' }),
      ]);
      const grantId = body.grants[0].id as string;
      await first.rest();

      // Same input: the grant lets it run without asking.
      const before = transfers;
      const second = await readTurn(
        await ada()('/chat', { method: 'POST', json: { id: 't-grant', message: 'again' } }),
      );
      expect(second.chunks.some((c) => c.type === 'tool-approval-request')).toBe(false);
      expect(transfers).toBe(before + 1);

      // Another input: the input-scoped grant does not cover it.
      const third = await parkedTurn('t-grant', 'seven now');
      const grants = await (await ada()('/grants')).json();
      expect(grants.grants.map((g: { id: string }) => g.id)).toEqual([grantId]);
      expect((await (await bob()('/grants')).json()).grants).toEqual([]);
      expect((await bob()(`/grants/${grantId}`, { method: 'DELETE', json: {} })).status).toBe(404);
      const revoked = await ada()(`/grants/${grantId}`, { method: 'DELETE', json: {} });
      expect(await revoked.json()).toEqual({ revoked: true, id: grantId });
      expect((await (await ada()('/grants')).json()).grants).toEqual([]);
      expect((await ada()(`/grants/${grantId}`, { method: 'DELETE', json: {} })).status).toBe(404);
      await ada()(`/approvals/${third.approvalId}/decide`, { method: 'POST', json: { decision: 'deny' } });
      await third.rest();

      const activity = await (await ada()('/activity?limit=100')).json();
      const kinds = activity.events.map((e: { kind: string }) => e.kind);
      expect(kinds).toEqual(
        expect.arrayContaining([
          'approval.requested',
          'approval.decided',
          'grant.created',
          'grant.used',
          'grant.revoked',
          'tool.called',
        ]),
      );
      expect((await (await bob()('/activity')).json()).events).toEqual([]);
    });

    it('pages activity by its nextBefore, and refuses a before it never issued, naming it', async () => {
      const erin = () => callerFor(service.fetch, `erin-${kind}`);
      const audit = new AuditLog(store.db);
      for (const n of [1, 2, 3]) await audit.recordNow(`erin-${kind}`, 'test.event', { n });
      const all = await (await erin()('/activity')).json();
      expect(all.events).toHaveLength(3);
      const first = await (await erin()('/activity?limit=1')).json();
      expect(first.events).toHaveLength(1);
      const rest = await (await erin()(`/activity?before=${first.nextBefore}`)).json();
      expect([...first.events, ...rest.events]).toEqual(all.events);
      expect(rest.nextBefore).toBeNull();
      expect((await (await erin()('/activity?limit=3')).json()).nextBefore).toBeNull();
      for (const before of ['abc', '0', '-1', '1.5', '1e400', '']) {
        const response = await erin()(`/activity?before=${encodeURIComponent(before)}`);
        expect(response.status, before).toBe(400);
        const { error } = await response.json();
        expect(error, before).toMatchObject({
          code: 'validation_failed',
          message: 'query.before: must be a nextBefore',
        });
      }
    });

    it('refuses ?org= and an org body field: organizations need the cloud capability', async () => {
      for (const path of ['/approvals?org=o1', '/grants?org=o1', '/approvals/apr_x?org=o1']) {
        const response = await ada()(path);
        expect(response.status).toBe(402);
        expect((await response.json()).error.code).toBe('cloud_required');
      }
      const body = await ada()('/approvals/decide', {
        method: 'POST',
        json: { org: 'o1', decisions: [{ id: 'apr_x', decision: 'approve' }] },
      });
      expect(body.status).toBe(402);
      const orgs = await callerFor(service.fetch, null)('/orgs/o1/members');
      expect(orgs.status).toBe(402);
      // Every route that acts as someone, not only these: never read as the user's own workspace.
      for (const path of ['/automations', '/runs', '/files', '/threads', '/activity', '/apps']) {
        const response = await ada()(`${path}?org=o1`);
        expect(response.status, path).toBe(402);
        expect((await response.json()).error.code).toBe('cloud_required');
      }
      const chat = await ada()('/chat?org=o1', { method: 'POST', json: { id: 'org-chat', message: 'hi' } });
      expect(chat.status).toBe(402);
      const chatField = await ada()('/chat', {
        method: 'POST',
        json: { id: 'org-chat', message: 'hi', org: 'o1' },
      });
      expect(chatField.status).toBe(402);
      const field = await ada()('/automations', {
        method: 'POST',
        json: { org: 'o1', name: 'x', prompt: 'y', trigger: { type: 'schedule', cron: '0 9 * * *' } },
      });
      expect(field.status).toBe(402);
      expect((await (await ada()('/threads')).json()).threads).not.toContainEqual(
        expect.objectContaining({ id: 'org-chat' }),
      );
    });

    it('expires an approval nobody answers, and the call does not run', async () => {
      const { model } = scriptedModel([
        { toolCalls: [{ id: 'e', name: 'transfer', input: { amount: 1 } }] },
        { text: ['ok'] },
      ]);
      let ran = false;
      const quick = await testService(store, {
        model,
        approvalTtlMs: 300,
        tools: [
          {
            name: 'transfer',
            description: 'd',
            input: z.object({ amount: z.number() }),
            needsApproval: true,
            execute: () => (ran = true),
          },
        ],
      });
      try {
        const call = callerFor(quick.fetch, `erin-${kind}`);
        const response = await call('/chat', { method: 'POST', json: { id: 'expiring', message: 'x' } });
        const paused = await readUntilPaused(new TurnReader(response));
        const rest = await resumeAfter(call, 'expiring', paused.resumeAfter);
        expect(rest.map((f) => f.chunk)).toContainEqual({
          type: 'tool-output-error',
          toolCallId: 'e',
          errorText: 'The approval expired.',
        });
        expect(ran).toBe(false);
        const approvals = await eventually(async () => {
          const list = (await (await call('/approvals?status=expired')).json()).approvals;
          return list.length === 1 ? list : undefined;
        });
        expect(approvals[0]).toMatchObject({ status: 'expired' });
        expect(approvals[0].request).toBeUndefined();
      } finally {
        await quick.close();
      }
    });
  });
}
