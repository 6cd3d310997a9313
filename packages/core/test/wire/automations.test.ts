/**
 * Automations on the wire, on every store kind: the records (per user), schedules fired by
 * `POST /tick` exactly once across two instances racing for them, the built-in scheduler,
 * webhook deliveries that start runs as `service:webhook:<source>` (self-minted and GitHub
 * signatures, deduplicated across instances), and the runs routes (filters, cursor, rerun).
 */
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolContext } from '../../src/agent/tools.js';
import { signGithubWebhook, signStripeWebhook, signWebhook } from '../../src/automations/webhooks.js';
import type { Store } from '../../src/store/index.js';
import type { Service } from '../../src/wire/create-service.js';
import type { ServiceOptions } from '../../src/wire/options.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { reactiveModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import { type Caller, callerFor, eventually, readTurn, testService, textOf } from './support/wire.js';

const TICK_SECRET = 'tick-secret-0123456789';
const HOOKS_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const GITHUB_SECRET = 'github-secret-0123456789';
const STRIPE_SECRET = 'whsec_stripe_0123456789';

interface Seen {
  subject: string;
  run: unknown;
}

/**
 * Every run calls one tool, then answers: `purge` (destructive: it parks for an approval) when
 * its prompt says so, else `observe` (which records who the run ran as and its RunContext).
 */
function automationModel() {
  return reactiveModel((options: LanguageModelV3CallOptions) => {
    if (options.prompt.at(-1)?.role === 'tool') return { text: ['done'] };
    const prompt = JSON.stringify(options.prompt.find((m) => m.role === 'user')?.content ?? '');
    const tool = prompt.includes('Purge') ? 'purge' : 'observe';
    return { toolCalls: [{ id: 'c1', name: tool, input: {} }] };
  });
}

for (const kind of STORE_KINDS) {
  describe(`automations (${kind})`, () => {
    let store: TestStore;
    let secondStore: Store;
    let one: Service;
    let two: Service;
    // Deliveries reach the instances over real sockets, through the Express adapter.
    let httpOne: Transport;
    let httpTwo: Transport;
    const seen = new Map<string, Seen>();
    const observe = {
      name: 'observe',
      description: 'Notes who the run is for',
      input: z.object({}),
      risk: 'read' as const,
      execute: (
        _input: unknown,
        context: { principal: { subject: string }; runId?: string; run?: unknown },
      ) => {
        seen.set(context.runId ?? '', { subject: context.principal.subject, run: context.run });
        return { ok: true };
      },
    };
    const purged: string[] = [];
    const purge = {
      name: 'purge',
      description: 'Purges old records',
      input: z.object({}),
      risk: 'destructive' as const,
      execute: (_input: unknown, context: { runId?: string }) => {
        purged.push(context.runId ?? '');
        return { purged: true };
      },
    };
    const settings = {
      tickSecret: TICK_SECRET,
      webhooks: {
        hooks: HOOKS_SECRET,
        github: { scheme: 'github' as const, secret: GITHUB_SECRET },
        stripe: { scheme: 'stripe' as const, secret: STRIPE_SECRET },
      },
    };

    beforeAll(async () => {
      store = await openTestStore(kind);
      // On Postgres the second instance has its own pool, as a second process would.
      secondStore = kind === 'postgres' ? await openSecondHandle(store) : store;
      one = await testService(store, {
        model: automationModel(),
        tools: [observe, purge],
        automations: settings,
      });
      two = await testService(secondStore, {
        model: automationModel(),
        tools: [observe, purge],
        automations: settings,
      });
      httpOne = await connect('express', one);
      httpTwo = await connect('express-fast', two);
    });
    afterAll(async () => {
      await httpOne?.close();
      await httpTwo?.close();
      await one?.close();
      await two?.close();
      if (secondStore !== store) await secondStore?.close();
      await store?.dispose();
    });

    const as = (user: string | null, service: Service = one): Caller => callerFor(service.fetch, user);
    const tick = (service: Service, secret = TICK_SECRET) =>
      callerFor(service.fetch, null)('/tick', {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}` },
      });

    async function create(user: string, body: unknown): Promise<Response> {
      return as(user)('/automations', { method: 'POST', json: body });
    }
    async function schedule(user: string, name = 'daily'): Promise<string> {
      const response = await create(user, {
        name,
        prompt: `Summarize my day (${name})`,
        trigger: { type: 'schedule', cron: '0 9 * * *', timezone: 'Europe/Paris' },
      });
      expect(response.status).toBe(201);
      return (await response.json()).automation.id;
    }
    /** Moves a schedule's next occurrence into the past, as if its time had come. */
    async function makeDue(id: string, agoMs = 60_000): Promise<void> {
      await store.db
        .updateTable('wire_automations')
        .set({ next_run_at: new Date(Date.now() - agoMs) })
        .where('id', '=', id)
        .execute();
    }
    /** The data of every audit event of `kind` recorded so far, oldest first. */
    async function auditData(kind: string): Promise<unknown[]> {
      const rows = await store.db
        .selectFrom('wire_audit_events')
        .select('data')
        .where('kind', '=', kind)
        .execute();
      return rows.map((row) => row.data);
    }
    async function finished(user: string, runId: string) {
      return eventually(async () => {
        const { run } = await (await as(user)(`/runs/${runId}`)).json();
        return run?.status === 'completed' ? run : undefined;
      });
    }

    describe('records', () => {
      it('creates, reads, lists with a cursor, updates, pauses, resumes and deletes', async () => {
        const created = await create('ada', {
          name: 'Morning brief',
          prompt: 'Summarize my orders',
          trigger: { type: 'schedule', cron: '30 8 * * 1-5', timezone: 'America/New_York' },
        });
        expect(created.status).toBe(201);
        const { automation } = await created.json();
        expect(automation).toMatchObject({
          id: expect.stringMatching(/^atm_/),
          name: 'Morning brief',
          status: 'active',
          trigger: { type: 'schedule', cron: '30 8 * * 1-5', timezone: 'America/New_York' },
          lastRunAt: null,
        });
        // 8:30 in New York is 12:30 or 13:30 UTC, on a weekday, in the future.
        const next = new Date(automation.nextRunAt);
        expect(next.getTime()).toBeGreaterThan(Date.now());
        expect([12, 13]).toContain(next.getUTCHours());
        expect(next.getUTCMinutes()).toBe(30);
        expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay());

        expect((await (await as('ada')(`/automations/${automation.id}`)).json()).automation).toEqual(
          automation,
        );

        const patched = await as('ada')(`/automations/${automation.id}`, {
          method: 'PATCH',
          json: { prompt: 'Summarize yesterday', trigger: { type: 'schedule', cron: '0 0 1 1 *' } },
        });
        expect(patched.status).toBe(200);
        const after = (await patched.json()).automation;
        expect(after).toMatchObject({
          name: 'Morning brief',
          prompt: 'Summarize yesterday',
          trigger: { type: 'schedule', cron: '0 0 1 1 *', timezone: 'UTC' },
        });
        expect(after.nextRunAt).toMatch(/-01-01T00:00:00\.000Z$/);

        const paused = await (
          await as('ada')(`/automations/${automation.id}/pause`, { method: 'POST', json: {} })
        ).json();
        expect(paused.automation).toMatchObject({ status: 'paused', nextRunAt: null });
        const resumed = await (
          await as('ada')(`/automations/${automation.id}/resume`, { method: 'POST', json: {} })
        ).json();
        expect(resumed.automation).toMatchObject({ status: 'active', nextRunAt: after.nextRunAt });

        const removed = await as('ada')(`/automations/${automation.id}`, { method: 'DELETE', json: {} });
        expect(await removed.json()).toEqual({ deleted: true, id: automation.id });
        expect((await as('ada')(`/automations/${automation.id}`)).status).toBe(404);
      });

      it('records a pause or resume once, however often or concurrently it is asked', async () => {
        const id = await schedule('repeater', 'twice');
        const pauses = await Promise.all(
          [1, 2, 3].map(() => as('repeater')(`/automations/${id}/pause`, { method: 'POST', json: {} })),
        );
        expect(pauses.map((r) => r.status)).toEqual([200, 200, 200]);
        for (const answer of pauses) expect((await answer.json()).automation.status).toBe('paused');
        await as('repeater')(`/automations/${id}/pause`, { method: 'POST', json: {} });
        for (let i = 0; i < 2; i++) {
          const resumed = await as('repeater')(`/automations/${id}/resume`, { method: 'POST', json: {} });
          expect((await resumed.json()).automation.status).toBe('active');
        }
        const { events } = (await (await as('repeater')('/activity')).json()) as {
          events: Array<{ kind: string; data: { automationId?: string } }>;
        };
        const kinds = events.filter((e) => e.data.automationId === id).map((e) => e.kind);
        expect(kinds).toEqual(['automation.resumed', 'automation.paused', 'automation.created']);
      });

      it('lists newest first, page by page', async () => {
        const ids: string[] = [];
        for (const name of ['p1', 'p2', 'p3']) ids.push(await schedule('lister', name));
        const first = await (await as('lister')('/automations?limit=2')).json();
        expect(first.automations.map((a: { id: string }) => a.id)).toEqual([ids[2], ids[1]]);
        // The cursor is the last one's place (its time to the microsecond, and its id)...
        expect(first.nextCursor).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:]{8}\\.\\d{6}Z~${ids[1]}$`));
        // ...so the next page follows on also when that one is deleted in between.
        await as('lister')(`/automations/${ids[1]}`, { method: 'DELETE', json: {} });
        const second = await (await as('lister')(`/automations?limit=2&cursor=${first.nextCursor}`)).json();
        expect(second.automations.map((a: { id: string }) => a.id)).toEqual([ids[0]]);
        expect(second.nextCursor).toBeNull();
        // A full page with nothing after it is the last: no cursor to an empty page.
        const whole = await (await as('lister')('/automations?limit=2')).json();
        expect(whole.automations).toHaveLength(2);
        expect(whole.nextCursor).toBeNull();
        // A cursor the list never issued is refused, not read as an empty last page: a bare id,
        // another list's, a day that does not exist.
        const at = first.nextCursor.split('~')[0];
        for (const cursor of [
          'garbage',
          '',
          'run_AAAAAAAAAAAAAAAAAAAAAA',
          `${ids[0]}x`,
          ids[0]!,
          `${at}~run_AAAAAAAAAAAAAAAAAAAAAA`,
          `2026-02-30T10:00:00.000000Z~${ids[0]}`,
          `0000-01-01T00:00:00.000000Z~${ids[0]}`,
          `${at.slice(0, -2)}Z~${ids[0]}`,
        ]) {
          const response = await as('lister')(`/automations?cursor=${encodeURIComponent(cursor)}`);
          expect(response.status, cursor).toBe(400);
          const { error } = await response.json();
          expect(error).toMatchObject({
            code: 'validation_failed',
            message: expect.stringContaining('cursor'),
          });
        }
      });

      it('pages rows of one millisecond apart by their microseconds, each once', async () => {
        const ids: string[] = [];
        for (const name of ['m1', 'm2', 'm3', 'm4', 'm5']) ids.push(await schedule('micro', name));
        // Two pairs share a microsecond, and all five a millisecond: only the cursor's microseconds
        // and ids tell them apart.
        const moments = ['.000100', '.000200', '.000200', '.000300', '.000300'];
        for (const [i, id] of ids.entries()) {
          await sql`update wire_automations set created_at = ${`2026-03-01 10:00:00${moments[i]}+00`}::timestamptz where id = ${id}`.execute(
            store.db,
          );
        }
        const seen: string[] = [];
        let cursor: string | null = null;
        for (let pages = 0; pages < 10; pages++) {
          const page = await (
            await as('micro')(`/automations?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          ).json();
          seen.push(...page.automations.map((a: { id: string }) => a.id));
          cursor = page.nextCursor;
          if (!cursor) break;
        }
        expect(seen).toHaveLength(5);
        expect(new Set(seen)).toEqual(new Set(ids));
        // Newest first: the two of .000300, then the two of .000200, then .000100.
        expect(new Set(seen.slice(0, 2))).toEqual(new Set([ids[3], ids[4]]));
        expect(seen[4]).toBe(ids[0]);
      });

      it("never shows, changes or deletes another user's automation (404)", async () => {
        const id = await schedule('owner-a');
        for (const [method, path] of [
          ['GET', `/automations/${id}`],
          ['PATCH', `/automations/${id}`],
          ['POST', `/automations/${id}/pause`],
          ['POST', `/automations/${id}/resume`],
          ['DELETE', `/automations/${id}`],
        ] as const) {
          const response = await as('intruder')(path, {
            method,
            ...(method === 'GET' ? {} : { json: method === 'PATCH' ? { name: 'x' } : {} }),
          });
          expect(response.status, `${method} ${path}`).toBe(404);
          expect((await response.json()).error.code).toBe('not_found');
        }
        expect((await (await as('intruder')('/automations')).json()).automations).toEqual([]);
        const still = await (await as('owner-a')(`/automations/${id}`)).json();
        expect(still.automation).toMatchObject({ name: 'daily', status: 'active' });
      });

      it('refuses bad input with a 4xx that names the field', async () => {
        const cases: Array<[unknown, string]> = [
          [{ name: 'x', prompt: 'y', trigger: { type: 'schedule', cron: 'every day' } }, 'body.trigger.cron'],
          [
            { name: 'x', prompt: 'y', trigger: { type: 'schedule', cron: '0 9 * * * *' } },
            'body.trigger.cron',
          ],
          [
            { name: 'x', prompt: 'y', trigger: { type: 'schedule', cron: '61 9 * * *' } },
            'body.trigger.cron',
          ],
          [
            {
              name: 'x',
              prompt: 'y',
              trigger: { type: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' },
            },
            'body.trigger.timezone',
          ],
          [
            { name: 'x', prompt: 'y', trigger: { type: 'webhook', source: 'shopify' } },
            'body.trigger.source',
          ],
          [{ name: 'x', prompt: 'y', trigger: { type: 'email' } }, 'body.trigger'],
          [{ name: '', prompt: 'y', trigger: { type: 'webhook', source: 'hooks' } }, 'body.name'],
          [{ name: 'x', trigger: { type: 'webhook', source: 'hooks' } }, 'body.prompt'],
          [{ name: 'x', prompt: 7, trigger: { type: 'webhook', source: 'hooks' } }, 'body.prompt'],
          [
            { name: 'x', prompt: 'y'.repeat(8001), trigger: { type: 'webhook', source: 'hooks' } },
            'body.prompt',
          ],
          [{ name: 'x', prompt: 'y', trigger: { type: 'webhook', source: 'hooks' }, owner: 'bob' }, 'owner'],
        ];
        for (const [body, field] of cases) {
          const response = await create('ada', body);
          expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
          const { error } = await response.json();
          expect(error.code).toBe('validation_failed');
          expect(error.message).toContain(field);
        }
        const malformed = await as('ada')('/automations', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"name":',
        });
        expect(malformed.status).toBe(400);
        expect((await malformed.json()).error.code).toBe('invalid_json');
        const form = await as('ada')('/automations', { method: 'POST', body: 'name=x' });
        expect(form.status).toBe(415);
        expect((await as(null)('/automations')).status).toBe(403);
        expect((await as('ada')('/automations?limit=0')).status).toBe(400);
        const empty = await as('ada')(`/automations/${await schedule('ada')}`, { method: 'PATCH', json: {} });
        expect(empty.status).toBe(400);
        const huge = await as('ada')('/automations', {
          method: 'POST',
          json: {
            name: 'x',
            prompt: 'y'.repeat(2 * 1024 * 1024),
            trigger: { type: 'webhook', source: 'hooks' },
          },
        });
        expect(huge.status).toBe(413);
      });
    });

    it('answers any cron and time zone text with 201 or 400, never a 5xx', async () => {
      const cronText = fc.oneof(
        fc.string({ maxLength: 40 }),
        fc
          .array(
            fc.constantFrom(
              '*',
              '*/0',
              '0',
              '59',
              '60',
              '1-5',
              '5-1',
              'L',
              'W',
              '#',
              '?',
              'MON',
              'JAN',
              '-1',
              ',',
            ),
            {
              minLength: 4,
              maxLength: 7,
            },
          )
          .map((parts) => parts.join(' ')),
      );
      const zone = fc.constantFrom('UTC', 'Europe/Paris', 'Etc/GMT+14', '', 'Mars/Base', '+05:00', 'utc');
      await fc.assert(
        fc.asyncProperty(cronText, zone, async (cron, timezone) => {
          const response = await create('fuzzer', {
            name: 'f',
            prompt: 'p',
            trigger: { type: 'schedule', cron, timezone },
          });
          expect([201, 400]).toContain(response.status);
          const body = await response.json();
          if (response.status === 201)
            expect(Date.parse(body.automation.nextRunAt)).toBeGreaterThan(Date.now());
          else expect(body.error.code).toBe('validation_failed');
        }),
        { numRuns: 150 },
      );
    });

    describe('tick', () => {
      it('fires a due schedule once, as its owner, and a tick after downtime fires it once, not per missed occurrence', async () => {
        const id = await schedule('tess');
        // Three days of missed 9:00 occurrences.
        await makeDue(id, 3 * 24 * 3600_000);
        const response = await tick(one);
        expect(response.status).toBe(200);
        const body = await response.json();
        const mine = body.runs.filter((r: { automation: string }) => r.automation === id);
        expect(mine).toHaveLength(1);
        expect(body.fired).toBe(body.runs.length);
        const again = await (await tick(one)).json();
        expect(again.runs.filter((r: { automation: string }) => r.automation === id)).toEqual([]);

        const run = await finished('tess', mine[0].run);
        expect(run).toMatchObject({ owner: 'tess', actor: 'tess', automationId: id, trigger: 'schedule' });
        expect(seen.get(run.id)).toMatchObject({
          subject: 'tess',
          run: { actor: 'tess', automationId: id, trigger: 'schedule' },
        });
        const automation = (await (await as('tess')(`/automations/${id}`)).json()).automation;
        expect(new Date(automation.nextRunAt).getTime()).toBeGreaterThan(Date.now());
        expect(automation.lastRunAt).not.toBeNull();
        // The owner's activity says it fired.
        await one.context.audit.flush();
        const { events } = await (await as('tess')('/activity')).json();
        expect(events.map((e: { kind: string }) => e.kind)).toContain('automation.fired');
      });

      it('two instances racing the same ticks fire each due occurrence exactly once', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(await schedule('racer', `race-${i}`));
        for (const id of ids) await makeDue(id);
        const answers = await Promise.all([tick(one), tick(two), tick(one), tick(two)]);
        const bodies = await Promise.all(answers.map((r) => r.json()));
        const fired = bodies
          .flatMap((b) => b.runs)
          .filter((r: { automation: string }) => ids.includes(r.automation));
        expect(fired.map((r: { automation: string }) => r.automation).sort()).toEqual([...ids].sort());
        for (const id of ids) {
          const { runs } = await (await as('racer')(`/runs?automation=${id}`)).json();
          expect(runs, id).toHaveLength(1);
        }
      });

      it('skips paused schedules and refuses a wrong secret (401, audited)', async () => {
        const id = await schedule('pat');
        await as('pat')(`/automations/${id}/pause`, { method: 'POST', json: {} });
        await makeDue(id);
        const body = await (await tick(one)).json();
        expect(body.runs.filter((r: { automation: string }) => r.automation === id)).toEqual([]);
        const refused = await tick(one, 'wrong-secret-0123456789');
        expect(refused.status).toBe(401);
        expect((await refused.json()).error.code).toBe('unauthorized');
        expect((await auditData('tick.rejected')).at(-1)).toEqual({ reason: 'bad_secret' });
      });
    });

    describe('webhook deliveries', () => {
      /** The user message a webhook run of the `hooks` source starts its thread with, as JSON text. */
      const webhookPrompt = async (threadId: string) => {
        const row = await store.db
          .selectFrom('wire_messages')
          .select('message')
          .where('owner', '=', 'service:webhook:hooks')
          .where('thread_id', '=', threadId)
          .where('role', '=', 'user')
          .executeTakeFirstOrThrow();
        return JSON.stringify(row.message);
      };
      const encoder = new TextEncoder();
      function standard(http: Transport, id: string, payload: string, secret = HOOKS_SECRET) {
        const at = Math.floor(Date.now() / 1000);
        return callerFor(
          http.fetch,
          null,
          http.url,
        )('/webhooks/hooks', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(at),
            'webhook-signature': signWebhook(secret, id, at, encoder.encode(payload)),
          },
          body: payload,
        });
      }
      function github(http: Transport, id: string, payload: string, secret = GITHUB_SECRET) {
        return callerFor(
          http.fetch,
          null,
          http.url,
        )('/webhooks/github', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-delivery': id,
            'x-hub-signature-256': signGithubWebhook(secret, payload),
          },
          body: payload,
        });
      }
      async function onSource(user: string, source: string): Promise<string> {
        const response = await create(user, {
          name: `on ${source}`,
          prompt: `Triage this ${source} event`,
          trigger: { type: 'webhook', source },
        });
        expect(response.status).toBe(201);
        return (await response.json()).automation.id;
      }

      it('starts a run as service:webhook:<source> that answers to the automation owner, once per delivery id', async () => {
        const id = await onSource('wendy', 'hooks');
        const payload = '{"event":"order.created","order":"A-7"}';
        const response = await standard(httpOne, 'msg_first', payload);
        expect(response.status).toBe(202);
        const body = await response.json();
        expect(body).toMatchObject({ accepted: true, duplicate: false, id: 'msg_first' });
        expect(body.runs).toHaveLength(1);

        const run = await finished('wendy', body.runs[0]);
        expect(run).toMatchObject({
          owner: 'service:webhook:hooks',
          actor: 'wendy',
          automationId: id,
          trigger: 'webhook',
        });
        expect(seen.get(run.id)).toMatchObject({
          subject: 'service:webhook:hooks',
          run: { actor: 'wendy', automationId: id, trigger: 'webhook' },
        });
        // The run's message carries the prompt and the delivery.
        const message = await webhookPrompt(run.threadId);
        expect(message).toContain('Triage this hooks event');
        expect(message).toContain('order.created');

        const repeated = await standard(httpTwo, 'msg_first', payload);
        expect(repeated.status).toBe(200);
        expect(await repeated.json()).toMatchObject({ duplicate: true, runs: [] });
        const { runs } = await (
          await as('wendy')(`/runs?automation=${id}&owner=service:webhook:hooks`)
        ).json();
        expect(runs.filter((r: { trigger: string }) => r.trigger === 'webhook')).toHaveLength(1);
        // The owner reads what the run said, though it ran as the service.
        const streamed = await readTurn(await as('wendy')(`/runs/${run.id}/stream`));
        expect(textOf(streamed.message)).toBe('done');
        expect(streamed.chunks.some((c) => c.type === 'tool-output-available')).toBe(true);
        const rest = await readTurn(await as('wendy')(`/runs/${run.id}/stream?after=${streamed.ids.at(-2)}`));
        expect(rest.ids).toEqual([streamed.ids.at(-1)]);
        expect((await as('wendy')(`/runs/${run.id}/stream?after=soon`)).status).toBe(400);
        // A rerun runs as the service again, answering to whoever asked.
        const rerun = await as('wendy')(`/runs/${run.id}/rerun`, { method: 'POST', json: {} });
        expect(rerun.status).toBe(202);
        const again = (await rerun.json()).run;
        expect(again).toMatchObject({ owner: 'service:webhook:hooks', actor: 'wendy', trigger: 'rerun' });
        await finished('wendy', again.id);
        expect(seen.get(again.id)).toMatchObject({ subject: 'service:webhook:hooks' });
        // Another user sees none of it.
        expect((await as('mallory')(`/runs/${again.id}/rerun`, { method: 'POST', json: {} })).status).toBe(
          404,
        );
        expect((await as('mallory')(`/runs/${run.id}/stream`)).status).toBe(404);
        expect((await as('mallory')(`/runs/${run.id}`)).status).toBe(404);
        expect((await (await as('mallory')('/runs?owner=service:webhook:hooks')).json()).runs).toEqual([]);
      });

      it("asks the automation's owner to approve what a delivery's run wants to do", async () => {
        const response = await create('olga', {
          name: 'cleanup',
          prompt: 'Purge what this event names',
          trigger: { type: 'webhook', source: 'hooks' },
        });
        const id = (await response.json()).automation.id;
        const delivered = await standard(httpOne, 'msg_purge', '{"older_than":"30d"}');
        const runId: string = (await delivered.json()).runs.at(-1);
        const approval = await eventually(async () => {
          const { approvals } = await (await as('olga')('/approvals?status=pending')).json();
          return approvals.find((a: { request?: { tool: string } }) => a.request?.tool === 'purge');
        });
        // The run is marked waiting right after its approval is stored: read it once it is.
        const waiting = await eventually(async () => {
          const { run } = await (await as('olga')(`/runs/${runId}`)).json();
          return run.status === 'awaiting_approval' ? run : undefined;
        });
        expect(waiting).toMatchObject({ owner: 'service:webhook:hooks', automationId: id });
        expect(purged).not.toContain(runId);
        const decided = await as('olga')(`/approvals/${approval.id}/decide`, {
          method: 'POST',
          json: { decision: 'approve', remember: true },
        });
        expect(decided.status).toBe(200);
        await finished('olga', runId);
        expect(purged).toContain(runId);

        // Olga said to remember it: the next delivery's run is covered by her grant, unasked.
        const next = await standard(httpOne, 'msg_purge_again', '{"older_than":"60d"}');
        const nextRunId: string = (await next.json()).runs.at(-1);
        const nextRun = await finished('olga', nextRunId);
        expect(nextRun.status).toBe('completed');
        expect(purged).toContain(nextRunId);
        const { approvals } = await (await as('olga')('/approvals')).json();
        expect(approvals.filter((a: { runId?: string }) => a.runId === nextRunId)).toEqual([]);
      });

      it('deduplicates one delivery sent to two instances at once', async () => {
        const id = await onSource('dora', 'hooks');
        const payload = '{"event":"twice"}';
        const answers = await Promise.all([
          standard(httpOne, 'msg_race', payload),
          standard(httpTwo, 'msg_race', payload),
        ]);
        expect(answers.map((r) => r.status).sort()).toEqual([200, 202]);
        await eventually(async () => {
          const { runs } = await (await as('dora')(`/runs?automation=${id}`)).json();
          return runs.length === 1 ? runs : undefined;
        });
      });

      it("verifies GitHub's X-Hub-Signature-256 over the raw body", async () => {
        const id = await onSource('gil', 'github');
        const payload = '{ "action": "opened",\n  "number": 42 }';
        const response = await github(httpOne, '5f1c-delivery', payload);
        expect(response.status).toBe(202);
        const { runs } = await response.json();
        const run = await finished('gil', runs[0]);
        expect(run).toMatchObject({ owner: 'service:webhook:github', actor: 'gil', automationId: id });

        const forged = await github(httpOne, '5f1c-other', payload, 'not-the-github-secret');
        expect(forged.status).toBe(401);
        const unsigned = await callerFor(one.fetch, null)('/webhooks/github', {
          method: 'POST',
          headers: { 'x-github-delivery': 'x' },
          body: payload,
        });
        expect(unsigned.status).toBe(401);
        expect(await auditData('webhook.rejected')).toEqual(
          expect.arrayContaining([
            { source: 'github', reason: 'bad_signature' },
            { source: 'github', reason: 'missing_headers' },
          ]),
        );
        // Nothing started for the refused ones.
        expect((await (await as('gil')(`/runs?automation=${id}`)).json()).runs).toHaveLength(1);
      });

      it('refuses a source named after a built-in of objects like any unknown source', async () => {
        for (const source of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
          const at = Math.floor(Date.now() / 1000);
          const response = await callerFor(
            httpOne.fetch,
            null,
            httpOne.url,
          )(`/webhooks/${source}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': `msg_${source}`,
              'webhook-timestamp': String(at),
              'webhook-signature': signWebhook(HOOKS_SECRET, `msg_${source}`, at, encoder.encode('{}')),
            },
            body: '{}',
          });
          expect(response.status, source).toBe(401);
          expect((await response.json()).error.code).toBe('unauthorized');
        }
        expect(await auditData('webhook.rejected')).toEqual(
          expect.arrayContaining([{ source: 'constructor', reason: 'unknown_source' }]),
        );
      });

      it('records the refusal of a source whose name is cut inside an emoji', async () => {
        // The audit keeps 64 characters of the name: the cut falls inside the emoji's pair.
        const source = `${'s'.repeat(63)}\u{1F600}tail`;
        const response = await callerFor(
          httpOne.fetch,
          null,
          httpOne.url,
        )(`/webhooks/${encodeURIComponent(source)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
        expect(response.status).toBe(401);
        expect(await auditData('webhook.rejected')).toEqual(
          expect.arrayContaining([{ source: `${'s'.repeat(63)}\u{1F600}`, reason: 'unknown_source' }]),
        );
      });

      it("verifies Stripe's Stripe-Signature and deduplicates by the event id", async () => {
        const id = await onSource('stan', 'stripe');
        const payload = '{"id":"evt_1Abc","type":"invoice.paid","data":{"object":{"amount_paid":900}}}';
        const send = (http: Transport, signature: string) =>
          callerFor(
            http.fetch,
            null,
            http.url,
          )('/webhooks/stripe', {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'stripe-signature': signature },
            body: payload,
          });
        const at = Math.floor(Date.now() / 1000);
        const first = await send(httpOne, signStripeWebhook(STRIPE_SECRET, at, payload));
        expect(first.status).toBe(202);
        const body = await first.json();
        expect(body).toMatchObject({ id: 'evt_1Abc', duplicate: false });
        const run = await finished('stan', body.runs[0]);
        expect(run).toMatchObject({ owner: 'service:webhook:stripe', actor: 'stan', automationId: id });
        // Stripe retries the same event with a new timestamp: still the same delivery.
        const retry = await send(httpTwo, signStripeWebhook(STRIPE_SECRET, at + 5, payload));
        expect(retry.status).toBe(200);
        expect((await retry.json()).duplicate).toBe(true);
        const stale = await send(httpOne, signStripeWebhook(STRIPE_SECRET, at - 600, payload));
        expect(stale.status).toBe(401);
        const forged = await send(httpOne, signStripeWebhook('whsec_not_the_secret_0', at, payload));
        expect(forged.status).toBe(401);
        expect((await (await as('stan')(`/runs?automation=${id}`)).json()).runs).toHaveLength(1);
      });

      it('takes a body with a NUL or lone surrogate with them replaced, and refuses an id with one as 400 on every retry', async () => {
        const id = await onSource('nora', 'hooks');
        // A raw NUL in the body (and a lone surrogate where a JSON escape would make one).
        const payload = '{"a":"x\u0000y","b":"\\ud800"}';
        const response = await standard(httpOne, 'msg_nul', payload);
        expect(response.status).toBe(202);
        const [mine] = (await (await as('nora')(`/runs?automation=${id}`)).json()).runs;
        const run = await finished('nora', mine.id);
        expect(await webhookPrompt(run.threadId)).toContain('x\ufffdy');
        const at = Math.floor(Date.now() / 1000);
        // The event's id as its JSON escapes it: a NUL, a lone surrogate.
        for (const bad of ['{"id":"evt_\\u0000x"}', '{"id":"evt_\\ud800x"}']) {
          for (const attempt of [0, 1]) {
            const refused = await callerFor(
              httpOne.fetch,
              null,
              httpOne.url,
            )('/webhooks/stripe', {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'stripe-signature': signStripeWebhook(STRIPE_SECRET, at + attempt, bad),
              },
              body: bad,
            });
            expect(refused.status, bad).toBe(400);
            expect((await refused.json()).error.message).toMatch(/^delivery id contains/);
          }
        }
        expect(await auditData('webhook.rejected')).toEqual(
          expect.arrayContaining([{ source: 'stripe', reason: 'invalid_id' }]),
        );
      });

      it('starts nothing for a paused automation, and refuses a bad signature without a run', async () => {
        const id = await onSource('paula', 'hooks');
        await as('paula')(`/automations/${id}/pause`, { method: 'POST', json: {} });
        const response = await standard(httpOne, 'msg_paused', '{}');
        expect(response.status).toBe(202);
        expect((await (await as('paula')(`/runs?automation=${id}`)).json()).runs).toEqual([]);
        await as('paula')(`/automations/${id}/resume`, { method: 'POST', json: {} });
        const forged = await standard(httpOne, 'msg_forged', '{}', 'whsec_bm90LXRoZS1zZWNyZXQtYXQtYWxs');
        expect(forged.status).toBe(401);
        expect((await (await as('paula')(`/runs?automation=${id}`)).json()).runs).toEqual([]);
      });
    });

    describe('runs', () => {
      it('filters by automation, owner and status, pages with a cursor, and reruns as the asker', async () => {
        const id = await schedule('rita');
        const runIds: string[] = [];
        for (let i = 0; i < 3; i++) {
          await makeDue(id);
          const body = await (await tick(one)).json();
          const mine = body.runs.find((r: { automation: string }) => r.automation === id);
          runIds.push(mine.run);
          await finished('rita', mine.run);
        }
        const page1 = await (await as('rita')(`/runs?automation=${id}&limit=2`)).json();
        expect(page1.runs.map((r: { id: string }) => r.id)).toEqual([runIds[2], runIds[1]]);
        const page2 = await (
          await as('rita')(`/runs?automation=${id}&limit=2&cursor=${page1.nextCursor}`)
        ).json();
        expect(page2.runs.map((r: { id: string }) => r.id)).toEqual([runIds[0]]);
        expect(page2.nextCursor).toBeNull();
        // A cursor the list never issued is refused, not read as an empty last page.
        expect(page1.nextCursor).toMatch(new RegExp(`Z~${runIds[1]}$`));
        for (const cursor of [
          'garbage',
          '',
          id,
          `${runIds[0]}x`,
          runIds[0]!,
          `2026-13-01T00:00:00.000000Z~${runIds[0]}`,
        ]) {
          const response = await as('rita')(`/runs?cursor=${encodeURIComponent(cursor)}`);
          expect(response.status, cursor).toBe(400);
          const { error } = await response.json();
          expect(error).toMatchObject({
            code: 'validation_failed',
            message: expect.stringContaining('cursor'),
          });
        }
        expect(
          (await (await as('rita')(`/runs?automation=${id}&status=completed`)).json()).runs,
        ).toHaveLength(3);
        expect((await (await as('rita')(`/runs?automation=${id}&status=failed`)).json()).runs).toEqual([]);
        expect((await (await as('rita')('/runs?owner=rita')).json()).runs.length).toBeGreaterThanOrEqual(3);

        const rerun = await as('rita')(`/runs/${runIds[0]}/rerun`, { method: 'POST', json: {} });
        expect(rerun.status).toBe(202);
        const { run } = await rerun.json();
        expect(run).toMatchObject({ automationId: id, trigger: 'rerun', actor: 'rita', owner: 'rita' });
        expect(run.id).not.toBe(runIds[0]);
        const done = await finished('rita', run.id);
        expect(seen.get(done.id)).toMatchObject({
          subject: 'rita',
          run: { trigger: 'rerun', actor: 'rita' },
        });
        expect((await (await as('rita')(`/runs?automation=${id}`)).json()).runs).toHaveLength(4);

        expect((await as('rex')(`/runs/${runIds[0]}/rerun`, { method: 'POST', json: {} })).status).toBe(404);
        expect((await as('rex')(`/runs/${runIds[0]}/stop`, { method: 'POST', json: {} })).status).toBe(404);
        expect((await as('rex')(`/runs/${runIds[0]}`)).status).toBe(404);
      });

      it("reruns a paused automation's run, and refuses a deleted automation's (409)", async () => {
        const id = await schedule('dora');
        await makeDue(id);
        const fired = (await (await tick(one)).json()).runs.find(
          (r: { automation: string }) => r.automation === id,
        );
        await finished('dora', fired.run);
        const rerun = (path: string) => as('dora')(`/runs/${path}/rerun`, { method: 'POST', json: {} });

        await as('dora')(`/automations/${id}/pause`, { method: 'POST', json: {} });
        const paused = await rerun(fired.run);
        expect(paused.status).toBe(202);
        await finished('dora', (await paused.json()).run.id);

        expect((await as('dora')(`/automations/${id}`, { method: 'DELETE', json: {} })).status).toBe(200);
        const refused = await rerun(fired.run);
        expect(refused.status).toBe(409);
        expect((await refused.json()).error).toMatchObject({
          code: 'not_rerunnable',
          message: expect.stringContaining('deleted'),
        });
        // The refusal started nothing: the automation's runs are the two from before.
        expect((await (await as('dora')(`/runs?automation=${id}`)).json()).runs).toHaveLength(2);
      });

      it('refuses to rerun a chat turn (409) and bad filters (400)', async () => {
        const chat = await as('carl')('/chat', { method: 'POST', json: { id: 'carl-1', message: 'hello' } });
        const runId = chat.headers.get('x-service-run-id');
        await chat.text();
        await finished('carl', runId ?? '');
        const refused = await as('carl')(`/runs/${runId}/rerun`, { method: 'POST', json: {} });
        expect(refused.status).toBe(409);
        expect((await refused.json()).error.code).toBe('not_rerunnable');
        const chatRun = (await (await as('carl')(`/runs/${runId}`)).json()).run;
        expect(chatRun).toMatchObject({ owner: 'carl', actor: null, automationId: null, trigger: 'chat' });
        for (const query of ['status=bogus', 'limit=0', 'limit=101', `owner=${'x'.repeat(300)}`]) {
          const response = await as('carl')(`/runs?${query}`);
          expect(response.status, query).toBe(400);
          expect((await response.json()).error.code).toBe('validation_failed');
        }
        expect((await as('carl')('/runs/run_nope/rerun', { method: 'POST', body: '{}' })).status).toBe(415);
      });
    });

    it('reports the automations block truthfully', async () => {
      const status = await (await as('ada')('/status')).json();
      expect(status.blocks.automations).toEqual({ tick: true, scheduler: false, webhookSources: 3 });
    });
  });
}

describe('automations in compositions of their own', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore();
  });
  afterAll(async () => {
    await store?.dispose();
  });

  it('fires due schedules without a tick, and stops with the service', async () => {
    const service = await testService(store, {
      model: reactiveModel(() => ({ text: ['ok'] })),
      automations: { scheduler: { intervalMs: 1000 } },
    });
    const as = callerFor(service.fetch, 'sam');
    expect((await (await as('/status')).json()).blocks.automations).toEqual({
      tick: false,
      scheduler: 1000,
      webhookSources: 0,
    });
    const created = await as('/automations', {
      method: 'POST',
      json: { name: 'tidy', prompt: 'Tidy up', trigger: { type: 'schedule', cron: '*/5 * * * *' } },
    });
    const id = (await created.json()).automation.id;
    const due = () =>
      store.db
        .updateTable('wire_automations')
        .set({ next_run_at: new Date(Date.now() - 1000) })
        .where('id', '=', id)
        .execute();
    await due();
    const runs = await eventually(async () => {
      const body = await (await as(`/runs?automation=${id}`)).json();
      return body.runs.length === 1 ? body.runs : undefined;
    }, 5000);
    expect(runs[0]).toMatchObject({ trigger: 'schedule', owner: 'sam' });
    await service.close();

    await due();
    await new Promise((resolve) => setTimeout(resolve, 2200));
    const count = await store.db
      .selectFrom('wire_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('automation_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it("forgets a timestamped source's delivery ids after a week, and keeps GitHub's", async () => {
    const service = await testService(store, {
      model: reactiveModel(() => ({ text: ['ok'] })),
      automations: { webhooks: { signed: HOOKS_SECRET, gh: { scheme: 'github', secret: GITHUB_SECRET } } },
    });
    const deliver = (id: string) => {
      const at = Math.floor(Date.now() / 1000);
      return callerFor(service.fetch, null)('/webhooks/signed', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(at),
          'webhook-signature': signWebhook(HOOKS_SECRET, id, at, new TextEncoder().encode('{}')),
        },
        body: '{}',
      });
    };
    const day = 24 * 60 * 60 * 1000;
    await store.db
      .insertInto('wire_webhook_deliveries')
      .values([
        { source: 'signed', delivery_id: 'msg_eight_days', received_at: new Date(Date.now() - 8 * day) },
        { source: 'signed', delivery_id: 'msg_six_days', received_at: new Date(Date.now() - 6 * day) },
        { source: 'gh', delivery_id: 'gh-eight-days', received_at: new Date(Date.now() - 8 * day) },
      ])
      .execute();
    const remembered = async () =>
      (await store.db.selectFrom('wire_webhook_deliveries').select('delivery_id').execute())
        .map((row) => row.delivery_id)
        .sort();
    try {
      // A new delivery sweeps: the week-old id is forgotten, the rest kept.
      expect((await deliver('msg_today')).status).toBe(202);
      await eventually(
        async () => ((await remembered()).includes('msg_eight_days') ? undefined : true),
        5000,
      );
      expect(await remembered()).toEqual(['gh-eight-days', 'msg_six_days', 'msg_today']);
      // Within the week a retry is still a duplicate.
      expect(await (await deliver('msg_six_days')).json()).toMatchObject({ duplicate: true });
    } finally {
      await service.close();
    }
  });

  it("runs a schedule as its owner's principal, as the host resolved it at the last save", async () => {
    const roles: unknown[] = [];
    const service = await testService(store, {
      principal: (request) => {
        const subject = request.headers.get('x-test-user');
        return subject ? { subject, role: request.headers.get('x-test-role') } : null;
      },
      model: reactiveModel((options) =>
        options.prompt.at(-1)?.role === 'tool'
          ? { text: ['ok'] }
          : { toolCalls: [{ id: 'c1', name: 'whoami', input: {} }] },
      ),
      tools: [
        {
          name: 'whoami',
          description: 'Reads the principal',
          input: z.object({}),
          risk: 'read' as const,
          execute: (_input: unknown, context: ToolContext) => {
            // Other schedules of this shared store may fire on the same tick.
            if (context.principal.subject === 'rolf') roles.push(context.principal.role);
            return {};
          },
        },
      ],
      automations: { tickSecret: TICK_SECRET },
    });
    try {
      const rolf = callerFor(service.fetch, 'rolf');
      const as =
        (role: string): Caller =>
        (path, init = {}) =>
          rolf(path, { ...init, headers: { 'x-test-role': role } });
      const created = await as('viewer')('/automations', {
        method: 'POST',
        json: { name: 'audit', prompt: 'Check access', trigger: { type: 'schedule', cron: '0 3 * * *' } },
      });
      const id = (await created.json()).automation.id;
      await as('admin')(`/automations/${id}`, { method: 'PATCH', json: { name: 'audit (nightly)' } });
      await store.db
        .updateTable('wire_automations')
        .set({ next_run_at: new Date(Date.now() - 1000) })
        .where('id', '=', id)
        .execute();
      await callerFor(service.fetch, null)('/tick', {
        method: 'POST',
        headers: { authorization: `Bearer ${TICK_SECRET}` },
      });
      await eventually(async () => (roles.length > 0 ? roles : undefined));
      expect(roles).toEqual(['admin']);
    } finally {
      await service.close();
    }
  });

  it('refuses a malformed automations composition, naming the option', async () => {
    const compose = (automations: unknown) =>
      testService(store, { automations: automations as ServiceOptions['automations'] });
    await expect(compose({ scheduler: { intervalMs: 10 } })).rejects.toThrow(
      /automations\.scheduler\.intervalMs .*1000/,
    );
    await expect(
      compose({ webhooks: { gitlab: { scheme: 'gitlab', secret: 'x'.repeat(20) } } }),
    ).rejects.toThrow(/automations\.webhooks\.gitlab must be a secret .* 'github' \| 'stripe'/);
    await expect(compose({ webhooks: { github: { scheme: 'github', secret: 'short' } } })).rejects.toThrow(
      /automations\.webhooks\.github\.secret .*16/,
    );
    await expect(compose({ webhooks: { 'Bad Name': 'x'.repeat(20) } })).rejects.toThrow(
      /automations\.webhooks\.Bad Name/,
    );
    await expect(compose('yes')).rejects.toThrow(/automations .*expected object/);
  });

  it('a closing instance claims no schedule and refuses deliveries with 503, so another instance takes them', async () => {
    const service = await testService(store, {
      model: reactiveModel(() => ({ text: ['ok'] })),
      automations: { tickSecret: TICK_SECRET, webhooks: { hooks: HOOKS_SECRET } },
    });
    const created = await callerFor(service.fetch, 'cleo')('/automations', {
      method: 'POST',
      json: { name: 'nightly', prompt: 'Tidy', trigger: { type: 'schedule', cron: '0 2 * * *' } },
    });
    const id = (await created.json()).automation.id;
    const due = new Date(Date.now() - 1000);
    await store.db.updateTable('wire_automations').set({ next_run_at: due }).where('id', '=', id).execute();
    await service.close();

    const ticked = await callerFor(service.fetch, null)('/tick', {
      method: 'POST',
      headers: { authorization: `Bearer ${TICK_SECRET}` },
    });
    expect(await ticked.json()).toEqual({ fired: 0, runs: [] });
    const row = await store.db
      .selectFrom('wire_automations')
      .select('next_run_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.next_run_at?.getTime()).toBe(due.getTime());

    const at = Math.floor(Date.now() / 1000);
    const payload = '{}';
    const delivered = await callerFor(service.fetch, null)('/webhooks/hooks', {
      method: 'POST',
      headers: {
        'webhook-id': 'msg_closing',
        'webhook-timestamp': String(at),
        'webhook-signature': signWebhook(HOOKS_SECRET, 'msg_closing', at, payload),
      },
      body: payload,
    });
    expect(delivered.status).toBe(503);
    expect(delivered.headers.get('retry-after')).toBe('2');
    const remembered = await store.db
      .selectFrom('wire_webhook_deliveries')
      .select('delivery_id')
      .where('delivery_id', '=', 'msg_closing')
      .execute();
    expect(remembered).toEqual([]);
  });

  it("never cancels an automation's run as abandoned: nobody reads it by design", async () => {
    const service = await testService(store, {
      model: reactiveModel(() => ({ chunkDelayMs: 500, text: ['slow', ' but', ' sure', '.'] })),
      resumeWindowMs: 300,
      automations: { tickSecret: TICK_SECRET },
    });
    try {
      const as = callerFor(service.fetch, 'nora');
      const created = await as('/automations', {
        method: 'POST',
        json: { name: 'slow', prompt: 'Take your time', trigger: { type: 'schedule', cron: '0 * * * *' } },
      });
      const id = (await created.json()).automation.id;
      await store.db
        .updateTable('wire_automations')
        .set({ next_run_at: new Date(Date.now() - 1000) })
        .where('id', '=', id)
        .execute();
      const fired = await callerFor(service.fetch, null)('/tick', {
        method: 'POST',
        headers: { authorization: `Bearer ${TICK_SECRET}` },
      });
      const runId = (await fired.json()).runs.find((r: { automation: string }) => r.automation === id).run;
      const run = await eventually(async () => {
        const body = await (await as(`/runs/${runId}`)).json();
        return body.run.status === 'running' ? undefined : body.run;
      }, 8000);
      expect(run).toMatchObject({ status: 'completed', stopReason: null });
    } finally {
      await service.close();
    }
  });
});
