/**
 * Text channels: an outside address (a phone number, a chat handle) bound to one owner's thread.
 * Text that arrives from the address (`TextChannels.receive`, called by the host's inbound
 * handler once it verified the sender) is the user's next message on that thread; the agent's
 * answer goes back to the address through the channel's adapter.
 *
 * @see docs/wire.md "Channels"
 */
import { randomUUID } from 'node:crypto';
import type { UIMessage } from 'ai';
import type { Kysely } from 'kysely';
import { newId } from '../agent/ids.js';
import { isPauseMarker } from '../agent/live-run.js';
import type { RunHub } from '../agent/run-hub.js';
import { signWebhook } from '../automations/index.js';
import { textProblem } from '../http/input-guard.js';
import type { Logger } from '../http/logger.js';
import type { Database } from '../store/database.js';

/** Longest inbound text, in UTF-8 bytes: what `POST /chat` takes by default (`maxBodyBytes`). */
const MAX_TEXT_BYTES = 1024 * 1024;

/** Sent for a turn that paused for an approval, after whatever it said before the call. */
export const AWAITING_APPROVAL_TEXT = 'Waiting for your approval in the app before going on.';

/** What a channel delivers: text for one address. */
export interface OutboundText {
  channel: string;
  address: string;
  text: string;
  bindingId: string;
  threadId: string;
}

/** One way of carrying text to outside addresses (SMS, a chat network, an email relay ...). */
export interface TextChannelAdapter {
  /** `^[a-z][a-z0-9-]{0,31}$`, unique among the composition's channels. */
  readonly name: string;
  /** Delivers the text; throws when the channel refused it (the failure is logged). */
  send(message: OutboundText): Promise<void>;
}

export interface ChannelBinding {
  id: string;
  channel: string;
  address: string;
  threadId: string;
  createdAt: string;
}

/** The outcome of inbound text: which binding took it and the run it started. */
export interface Received {
  bindingId: string;
  threadId: string;
  runId: string;
  /**
   * Settles when the first text went back (or failed to): the answer, or, for a turn that paused
   * for an approval, what it said before with `AWAITING_APPROVAL_TEXT` (then the rest of the
   * answer is sent when the run ends after the decision).
   */
  answered: Promise<{ sent: boolean; text: string }>;
}

export class ChannelAddressTakenError extends Error {
  override name = 'ChannelAddressTakenError';
}

/**
 * Inbound text refused before anything ran: empty, not text the store can hold (a NUL, a lone
 * surrogate), or longer than a chat message may be. The host's inbound handler answers it as a
 * 400; the message says which.
 */
export class ChannelTextRefusedError extends Error {
  override name = 'ChannelTextRefusedError';
}

/**
 * An adapter that POSTs each outbound text as JSON to `url`, signed like the wire's own webhooks
 * (standard-webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature` = HMAC-SHA256 over
 * `id.timestamp.body`), for a gateway (an SMS provider's relay, a bot) that verifies and delivers.
 */
export function webhookTextChannel(options: {
  name: string;
  url: string;
  secret: string;
  timeoutMs?: number;
}): TextChannelAdapter {
  return {
    name: options.name,
    async send(message) {
      const body = JSON.stringify({
        channel: message.channel,
        address: message.address,
        text: message.text,
        threadId: message.threadId,
      });
      const id = `msg_${randomUUID()}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const answer = await fetch(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(options.secret, id, timestamp, body),
        },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
      await answer.body?.cancel();
      if (!answer.ok) throw new Error(`channel ${options.name} answered ${answer.status}`);
    },
  };
}

export class TextChannels {
  readonly #adapters: Map<string, TextChannelAdapter>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runs: RunHub,
    adapters: TextChannelAdapter[],
    private readonly logger: Logger,
  ) {
    this.#adapters = new Map(adapters.map((a) => [a.name, a]));
  }

  names(): string[] {
    return [...this.#adapters.keys()];
  }

  has(channel: string): boolean {
    return this.#adapters.has(channel);
  }

  async list(owner: string): Promise<ChannelBinding[]> {
    const rows = await this.db
      .selectFrom('wire_channel_bindings')
      .selectAll()
      .where('owner', '=', owner)
      .orderBy('created_at')
      .execute();
    return rows.map(view);
  }

  /** Binds `address` on `channel` to the owner's thread; an address already bound throws. */
  async bind(
    owner: string,
    input: { channel: string; address: string; threadId: string },
  ): Promise<ChannelBinding> {
    const row = await this.db
      .insertInto('wire_channel_bindings')
      .values({
        id: newId('chb'),
        owner,
        channel: input.channel,
        address: input.address,
        thread_id: input.threadId,
      })
      .onConflict((oc) => oc.columns(['channel', 'address']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!row)
      throw new ChannelAddressTakenError(`${input.channel} address ${input.address} is already bound`);
    return view(row);
  }

  async unbind(owner: string, id: string): Promise<boolean> {
    const row = await this.db
      .deleteFrom('wire_channel_bindings')
      .where('owner', '=', owner)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Sends `text` from the owner to the address of their binding `id`: true when delivered, false
   * when the channel refused it (logged), null when the owner has no such binding.
   */
  async send(owner: string, id: string, text: string): Promise<boolean | null> {
    const row = await this.db
      .selectFrom('wire_channel_bindings')
      .selectAll()
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
    const adapter = row ? this.#adapters.get(row.channel) : undefined;
    if (!row || !adapter) return null;
    return this.#deliver(adapter, view(row), text);
  }

  /**
   * Text from `address` on `channel`: the bound thread's owner says it, as a new turn; the answer's
   * text goes back to the address when the run ends. Null when the address is bound to nothing.
   * Throws the agent's refusals (a turn already in flight on the thread).
   */
  async receive(input: { channel: string; address: string; text: string }): Promise<Received | null> {
    refuseInbound(input);
    const binding = await this.db
      .selectFrom('wire_channel_bindings')
      .selectAll()
      .where('channel', '=', input.channel)
      .where('address', '=', input.address)
      .executeTakeFirst();
    const adapter = this.#adapters.get(input.channel);
    if (!binding || !adapter) return null;
    const message: UIMessage = {
      id: newId('msg'),
      role: 'user',
      parts: [{ type: 'text', text: input.text }],
    };
    const run = await this.runs.startTurn({ subject: binding.owner }, binding.thread_id, message);
    const answered = this.#answer(adapter, view(binding), run.id);
    return { bindingId: binding.id, threadId: binding.thread_id, runId: run.id, answered };
  }

  /**
   * Follows the run and sends its text back: at each pause for an approval what it said so far
   * with a note that it waits (a reader ends at the pause), and at its end the rest. Settles
   * with the first text sent; the follow-up goes on after a decision, however late.
   */
  #answer(adapter: TextChannelAdapter, binding: ChannelBinding, runId: string) {
    return new Promise<{ sent: boolean; text: string }>((settle) => {
      const follow = async () => {
        let after = 0;
        let first = true;
        for (;;) {
          let text = '';
          let paused = false;
          for await (const { seq, chunk } of this.runs.follow(runId, after, new AbortController().signal)) {
            after = seq;
            if (chunk.type === 'text-delta') text += chunk.delta;
            paused = isPauseMarker(chunk);
          }
          text = text.trim();
          if (paused) text = text ? `${text}\n\n${AWAITING_APPROVAL_TEXT}` : AWAITING_APPROVAL_TEXT;
          const sent = text ? await this.#deliver(adapter, binding, text) : false;
          if (first) settle({ sent, text });
          first = false;
          if (!paused) return;
        }
      };
      follow().catch((error: unknown) => {
        this.logger.warn('channel answer not followed', {
          run_id: runId,
          error_message: (error as Error).message,
        });
        settle({ sent: false, text: '' });
      });
    });
  }

  async #deliver(adapter: TextChannelAdapter, binding: ChannelBinding, text: string): Promise<boolean> {
    try {
      await adapter.send({
        channel: binding.channel,
        address: binding.address,
        text,
        bindingId: binding.id,
        threadId: binding.threadId,
      });
      return true;
    } catch (error) {
      this.logger.warn('channel send failed', {
        channel: binding.channel,
        binding_id: binding.id,
        error_message: (error as Error).message,
      });
      return false;
    }
  }
}

/** The checks `POST /chat` applies to a message's text, and the same for the address it came from. */
function refuseInbound(input: { channel: unknown; address: unknown; text: unknown }): void {
  for (const field of ['channel', 'address', 'text'] as const) {
    const value = input[field];
    if (typeof value !== 'string' || value.trim() === '') {
      throw new ChannelTextRefusedError(`${field}: must be a non-empty string`);
    }
    const problem = textProblem(value);
    if (problem) throw new ChannelTextRefusedError(`${field}: ${problem}`);
  }
  if (Buffer.byteLength(input.text as string) > MAX_TEXT_BYTES) {
    throw new ChannelTextRefusedError(`text: longer than ${MAX_TEXT_BYTES} bytes`);
  }
}

function view(row: {
  id: string;
  channel: string;
  address: string;
  thread_id: string;
  created_at: Date;
}): ChannelBinding {
  return {
    id: row.id,
    channel: row.channel,
    address: row.address,
    threadId: row.thread_id,
    createdAt: row.created_at.toISOString(),
  };
}
