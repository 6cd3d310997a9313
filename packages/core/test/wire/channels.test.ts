/**
 * Text channels: bindings of outside addresses to threads, text sent out through a channel, and
 * text coming in from an address answered back on it. One adapter records what it is given; the
 * other is the webhook adapter, posting signed JSON to a gateway on loopback that checks the
 * signature.
 *
 * @see docs/wire.md "Channels"
 */

import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { signWebhook } from '../../src/automations/index.js';
import {
  AWAITING_APPROVAL_TEXT,
  ChannelTextRefusedError,
  type OutboundText,
  type TextChannelAdapter,
  webhookTextChannel,
} from '../../src/wire/channels.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { lastUserText, reactiveModel } from './support/models.js';
import { type Caller, callerFor, eventually, testService } from './support/wire.js';

const SECRET = 'gateway-secret-0123456789';

/** A gateway on loopback: takes signed deliveries, refuses bad signatures with 401. */
async function startGateway() {
  const delivered: { address: string; text: string; threadId: string }[] = [];
  let refuseNext = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id']);
      const timestamp = Number(req.headers['webhook-timestamp']);
      const expected = Buffer.from(signWebhook(SECRET, id, timestamp, body));
      const given = Buffer.from(String(req.headers['webhook-signature']));
      const valid = expected.length === given.length && timingSafeEqual(expected, given);
      if (!valid || refuseNext) {
        refuseNext = false;
        res.writeHead(valid ? 503 : 401).end();
        return;
      }
      delivered.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/deliver`,
    delivered,
    refuseOnce: () => {
      refuseNext = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

for (const kind of STORE_KINDS) {
  describe(`wire text channels (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let gateway: Awaited<ReturnType<typeof startGateway>>;
    const recorded: OutboundText[] = [];
    const recorder: TextChannelAdapter = {
      name: 'test',
      send: async (message) => {
        recorded.push(message);
      },
    };
    let ada: Caller;
    let bob: Caller;

    beforeAll(async () => {
      store = await openTestStore(kind);
      gateway = await startGateway();
      // "unlock" calls a tool that needs the user's approval, then answers; anything else is echoed.
      let calls = 0;
      const model = reactiveModel((options) => {
        const said = lastUserText(options);
        if (said.includes('unlock')) {
          return options.prompt.at(-1)?.role === 'tool'
            ? { text: ['Unlocked.'] }
            : { toolCalls: [{ id: `u${++calls}`, name: 'unlock', input: {} }] };
        }
        return { text: [`You said ${said.includes('ping') ? 'ping' : 'something'}.`] };
      });
      service = await testService(store, {
        model,
        tools: [
          {
            name: 'unlock',
            description: 'Unlocks the door',
            input: z.object({}),
            risk: 'write',
            needsApproval: true,
            execute: () => ({ unlocked: true }),
          },
        ],
        channels: [recorder, webhookTextChannel({ name: 'sms', url: gateway.url, secret: SECRET })],
      });
      ada = callerFor((r) => service.fetch(r), 'ada');
      bob = callerFor((r) => service.fetch(r), 'bob');
    });
    afterAll(async () => {
      await service?.close();
      await gateway?.close();
      await store?.dispose();
    });

    it('binds an address to a thread, lists it per user, and refuses a taken address', async () => {
      const bound = await ada('/channels/text', {
        method: 'POST',
        json: { channel: 'test', address: '+15550001', threadId: 'phone-thread' },
      });
      expect(bound.status).toBe(201);
      const { binding } = (await bound.json()) as { binding: { id: string; threadId: string } };
      expect(binding).toMatchObject({ channel: 'test', address: '+15550001', threadId: 'phone-thread' });
      expect(binding.id).toMatch(/^chb_/);

      const listed = (await (await ada('/channels/text')).json()) as {
        channels: string[];
        bindings: unknown[];
      };
      expect(listed.channels).toEqual(['test', 'sms']);
      expect(listed.bindings).toHaveLength(1);
      expect(((await (await bob('/channels/text')).json()) as { bindings: unknown[] }).bindings).toEqual([]);

      const taken = await bob('/channels/text', {
        method: 'POST',
        json: { channel: 'test', address: '+15550001' },
      });
      expect(taken.status).toBe(409);
      expect(taken.headers.get('service-error-code')).toBe('channel_address_taken');
    });

    it('answers text coming in from a bound address on the same address, as a turn on its thread', async () => {
      const received = await service.context.channels!.receive({
        channel: 'test',
        address: '+15550001',
        text: 'ping',
      });
      expect(received?.threadId).toBe('phone-thread');
      expect(await received!.answered).toEqual({ sent: true, text: 'You said ping.' });
      expect(recorded.at(-1)).toMatchObject({
        address: '+15550001',
        text: 'You said ping.',
        threadId: 'phone-thread',
      });
      const thread = (await (await ada('/threads/phone-thread')).json()) as {
        thread: { messages: { role: string }[] };
      };
      expect(thread.thread.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(
        await service.context.channels!.receive({ channel: 'test', address: '+19999', text: 'x' }),
      ).toBeNull();
    });

    it('says a turn waits for an approval, and sends its answer once the approval is decided', async () => {
      await ada('/channels/text', {
        method: 'POST',
        json: { channel: 'test', address: '+15550009', threadId: 'phone-approval' },
      });
      const received = await service.context.channels!.receive({
        channel: 'test',
        address: '+15550009',
        text: 'unlock the door',
      });
      expect(await received!.answered).toEqual({ sent: true, text: AWAITING_APPROVAL_TEXT });
      expect(recorded.at(-1)).toMatchObject({ address: '+15550009', text: AWAITING_APPROVAL_TEXT });
      const { approvals } = (await (await ada('/approvals?status=pending')).json()) as {
        approvals: { id: string; threadId: string }[];
      };
      const approval = approvals.find((a) => a.threadId === 'phone-approval')!;
      await ada(`/approvals/${approval.id}/decide`, { method: 'POST', json: { decision: 'approve' } });
      const answer = await eventually(async () =>
        recorded.at(-1)?.text === AWAITING_APPROVAL_TEXT ? undefined : recorded.at(-1),
      );
      expect(answer).toMatchObject({ address: '+15550009', text: 'Unlocked.', threadId: 'phone-approval' });
    });

    it('refuses inbound text POST /chat would refuse, before any turn', async () => {
      const channels = service.context.channels!;
      for (const input of [
        { channel: 'test', address: '+15550001', text: '' },
        { channel: 'test', address: '+15550001', text: '  ' },
        { channel: 'test', address: '+15550001', text: 'a\u0000b' },
        { channel: 'test', address: '+15550001', text: 'a\ud800b' },
        { channel: 'test', address: '+15550001' } as { channel: string; address: string; text: string },
        { channel: 'test', address: '+1555\u00000001', text: 'ping' },
      ]) {
        await expect(channels.receive(input), JSON.stringify(input)).rejects.toBeInstanceOf(
          ChannelTextRefusedError,
        );
      }
      const thread = (await (await ada('/threads/phone-thread')).json()) as {
        thread: { messages: unknown[] };
      };
      expect(thread.thread.messages).toHaveLength(2);
    });

    it('sends through the webhook adapter, signed, and reports a refusal as 502', async () => {
      const bound = await ada('/channels/text', {
        method: 'POST',
        json: { channel: 'sms', address: '+15550002' },
      });
      const { binding } = (await bound.json()) as { binding: { id: string; threadId: string } };
      const sent = await ada(`/channels/text/${binding.id}/send`, {
        method: 'POST',
        json: { text: 'Your order shipped' },
      });
      expect(await sent.json()).toEqual({ sent: true });
      expect(gateway.delivered.at(-1)).toEqual({
        channel: 'sms',
        address: '+15550002',
        text: 'Your order shipped',
        threadId: binding.threadId,
      });
      gateway.refuseOnce();
      const refused = await ada(`/channels/text/${binding.id}/send`, {
        method: 'POST',
        json: { text: 'again' },
      });
      expect(refused.status).toBe(502);
      expect(refused.headers.get('service-error-code')).toBe('channel_send_failed');
      const wrongSecret = webhookTextChannel({
        name: 'sms',
        url: gateway.url,
        secret: 'not-the-gateway-secret',
      });
      await expect(
        wrongSecret.send({ channel: 'sms', address: 'x', text: 'x', bindingId: 'b', threadId: 't' }),
      ).rejects.toThrow('answered 401');
    });

    it('keeps bindings to their owner, and refuses bad input with 400', async () => {
      const { bindings } = (await (await ada('/channels/text')).json()) as { bindings: { id: string }[] };
      const id = bindings[0]!.id;
      expect((await bob(`/channels/text/${id}/send`, { method: 'POST', json: { text: 'hi' } })).status).toBe(
        404,
      );
      expect((await bob(`/channels/text/${id}`, { method: 'DELETE', json: {} })).status).toBe(404);
      for (const json of [
        { channel: 'fax', address: '1' },
        { channel: 'test', address: '' },
        { channel: 'test', address: 'a\u0007b' },
        { channel: 'test', address: '1', threadId: 'bad id' },
      ]) {
        expect((await ada('/channels/text', { method: 'POST', json })).status, JSON.stringify(json)).toBe(
          400,
        );
      }
      expect((await ada(`/channels/text/${id}/send`, { method: 'POST', json: { text: '' } })).status).toBe(
        400,
      );
      const deleted = await ada(`/channels/text/${id}`, { method: 'DELETE', json: {} });
      expect(await deleted.json()).toEqual({ deleted: true, id });
      expect(
        await service.context.channels!.receive({ channel: 'test', address: '+15550001', text: 'x' }),
      ).toBeNull();
    });
  });
}

describe('wire without channels', () => {
  it('does not mount /channels/text', async () => {
    const store = await openTestStore('pglite');
    const service = await testService(store);
    try {
      expect((await callerFor((r) => service.fetch(r), 'ada')('/channels/text')).status).toBe(404);
      expect(service.context.channels).toBeNull();
    } finally {
      await service.close();
      await store.dispose();
    }
  });
});
