/**
 * Text channels: `GET /channels/text` (the composition's channels and the user's bindings),
 * `POST /channels/text` (bind an address to a thread), `DELETE /channels/text/:id`, and
 * `POST /channels/text/:id/send` (text from the user's thread out to the bound address). Text
 * coming in from an address reaches the wire through `service.context.channels.receive(...)`.
 *
 * @see docs/wire.md "Channels"
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { CLIENT_ID_PATTERN, newId } from '../../agent/ids.js';
import { ChannelAddressTakenError, type TextChannels } from '../channels.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { jsonBody, noFields, principalOf } from '../request.js';

const bindSchema = z.object({
  channel: z.string().min(1).max(32),
  address: z
    .string()
    .trim()
    .min(1)
    .max(256)
    // A printable address: no control characters (checked by code point, not a regex of them).
    .refine(
      (value) => ![...value].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f),
      'must be printable text',
    ),
  threadId: z.string().regex(CLIENT_ID_PATTERN, 'must be 1-64 letters, digits, _ or -').optional(),
});
const sendSchema = z.object({ text: z.string().trim().min(1).max(4000) });

export function channelRoutes(ctx: WireContext, channels: TextChannels): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/channels/text', async (c) => {
    const principal = await principalOf(ctx, c);
    return c.json({ channels: channels.names(), bindings: await channels.list(principal.subject) });
  });

  app.post('/channels/text', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, bindSchema);
    if (!channels.has(body.channel)) {
      throw new WireError('validation_failed', `body.channel: no channel named "${body.channel}".`);
    }
    try {
      const binding = await channels.bind(principal.subject, {
        channel: body.channel,
        address: body.address,
        threadId: body.threadId ?? newId('thr'),
      });
      ctx.audit.record(principal.subject, 'channel.bound', {
        bindingId: binding.id,
        channel: binding.channel,
      });
      return c.json({ binding }, 201);
    } catch (error) {
      if (error instanceof ChannelAddressTakenError) {
        throw new WireError('channel_address_taken', 'That address is already bound on this channel.');
      }
      throw error;
    }
  });

  app.delete('/channels/text/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await channels.unbind(principal.subject, id))) throw new WireError('not_found', 'No such binding.');
    ctx.audit.record(principal.subject, 'channel.unbound', { bindingId: id });
    return c.json({ deleted: true, id });
  });

  app.post('/channels/text/:id/send', async (c) => {
    const principal = await principalOf(ctx, c);
    const { text } = await jsonBody(ctx, c, sendSchema);
    const sent = await channels.send(principal.subject, c.req.param('id'), text);
    if (sent === null) throw new WireError('not_found', 'No such binding.');
    if (!sent)
      throw new WireError('channel_send_failed', 'The channel did not take the text; try again later.');
    return c.json({ sent: true });
  });

  return app;
}
