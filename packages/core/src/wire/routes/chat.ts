/**
 * Turns: `POST /chat` starts one and streams it, regenerates the last answer, or takes the AI
 * SDK's tool approval responses and streams the run on; `GET /threads/:id/stream` (alias
 * `GET /chat/:id/stream`, where useChat's resume looks) follows the thread's run again.
 *
 * The server owns the history: of a useChat body only the last message is read (a user message,
 * or the assistant's approval responses), so a client cannot rewrite earlier turns or forge tool
 * results.
 *
 * @see docs/wire.md "Turns", "Approvals and grants"
 */
import type { UIMessage } from 'ai';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Decision } from '../../agent/approvals.js';
import { decodeDataUrl, type FileSummary } from '../../agent/files.js';
import { CLIENT_ID_PATTERN, newId } from '../../agent/ids.js';
import { isTerminal } from '../../agent/run-rows.js';
import type { Principal } from '../../agent/tools.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireCtx, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { chatBody, presentCredentials, principalOf, queryOf, validate } from '../request.js';
import { turnStreamResponse } from '../sse.js';
import { decideInBand, MAX_REASON } from './approvals.js';

const userPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({
    type: z.literal('file'),
    mediaType: z.string().max(255),
    // A data URL's size is bounded by the body's cap (`maxBodyBytes`); larger files go by POST /files.
    url: z.string(),
    filename: z.string().max(255).optional(),
  }),
]);

const userMessageSchema = z.object({
  id: z.string().min(1).max(128).optional(),
  role: z.literal('user', { message: 'the last message must be the user’s' }),
  parts: z.array(userPartSchema).min(1).max(50),
  metadata: z.unknown().optional(),
});

const chatBodySchema = z.looseObject({
  id: z.string().regex(CLIENT_ID_PATTERN, 'must be 1-64 letters, digits, _ or -').optional(),
  message: z.union([z.string().trim().min(1), userMessageSchema]).optional(),
  messages: z.array(z.unknown()).min(1).max(1000).optional(),
  trigger: z.enum(['submit-message', 'regenerate-message']).optional(),
  messageId: z.string().min(1).max(128).optional(),
});

type ChatBody = z.infer<typeof chatBodySchema>;

/** The AI SDK's resend after `addToolApprovalResponse`: only what is read of it is checked. */
const assistantMessageSchema = z.looseObject({
  role: z.literal('assistant'),
  parts: z.array(z.unknown()).max(1000),
  metadata: z.unknown().optional(),
});

const approvalResponseSchema = z.looseObject({
  approval: z.looseObject({
    id: z.string().min(1).max(64),
    approved: z.boolean(),
    reason: z.string().max(MAX_REASON).optional(),
  }),
});

/** A stream cursor: the sequence number of the last chunk the client has. */
const cursorSchema = wholeNumber(0, 10_000_000);

/**
 * The client's stream cursor: `Last-Event-ID` (what a reconnecting reader sends), else
 * `?after=`. A refusal names the one sent, so a client can tell its header from its query.
 */
export function streamCursor(c: WireCtx): number | undefined {
  const header = c.req.header('last-event-id');
  if (header !== undefined) return validate(cursorSchema, header, 'headers.last-event-id');
  const after = queryOf(c).after;
  return after === undefined ? undefined : validate(cursorSchema, after, 'query.after');
}

export function chatRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.post('/chat', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await chatBody(ctx, c, chatBodySchema);
    if (body.trigger === 'regenerate-message') {
      const threadId = threadIdOf(body, 'to regenerate an answer');
      const run = await ctx.runs.regenerate(
        principal,
        threadId,
        body.messageId,
        presentCredentials(ctx, c.req.raw),
      );
      return follow(ctx, c, run.id, threadId, 0);
    }
    const last = body.message === undefined ? body.messages?.at(-1) : undefined;
    if ((last as { role?: unknown } | undefined)?.role === 'assistant') {
      return answerApprovals(ctx, c, principal, body, last);
    }
    const message = await storeAttachments(ctx, principal, userMessageOf(body), messageField(body));
    const threadId = body.id ?? newId('thr');
    const run = await ctx.runs.startTurn(principal, threadId, message, presentCredentials(ctx, c.req.raw));
    return follow(ctx, c, run.id, threadId, 0);
  });

  const resume = async (c: WireCtx) => {
    const principal = await principalOf(ctx, c);
    const threadId = c.req.param('id') ?? '';
    const query = queryOf(c);
    const cursor = streamCursor(c);
    if (!(await ctx.threads.exists(principal.subject, threadId))) {
      throw new WireError('not_found', 'No such thread.');
    }
    const run = query.run
      ? await ctx.runs.getRun(principal.subject, query.run)
      : await ctx.runs.latestRun(principal.subject, threadId);
    if (query.run && (!run || run.threadId !== threadId)) throw new WireError('not_found', 'No such run.');
    // Nothing to resume: no run, or a finished one the client did not start reading.
    if (!run || (cursor === undefined && isTerminal(run.status))) return c.body(null, 204);
    return follow(ctx, c, run.id, threadId, cursor ?? 0);
  };
  app.get('/threads/:id/stream', resume);
  app.get('/chat/:id/stream', resume);

  return app;
}

/** The run's stream after `after`, as a turn streams it; shared with `GET /runs/:id/stream`. */
export function follow(
  ctx: WireContext,
  c: WireCtx,
  runId: string,
  threadId: string,
  after: number,
): Response {
  const abort = new AbortController();
  const detach = ctx.runs.attach(runId);
  // A client that goes away only stops reading: the run goes on, to be resumed.
  c.req.raw.signal?.addEventListener('abort', () => abort.abort(), { once: true });
  return turnStreamResponse(ctx.runs.follow(runId, after, abort.signal), abort, {
    heartbeatMs: ctx.heartbeatMs,
    headers: {
      'x-service-thread-id': threadId,
      'x-service-run-id': runId,
      'x-request-id': c.get('requestId'),
    },
    onClose: detach,
  });
}

/**
 * The AI SDK's resend after `addToolApprovalResponse`: its last message is the assistant's, with
 * the calls the user answered in state `approval-responded`. Each pending approval is decided as
 * `POST /approvals/decide` would; the answer is the thread's latest run streamed on from where
 * the client's stream ended (`resumeAfter` of the message's metadata, the pause marker).
 */
async function answerApprovals(
  ctx: WireContext,
  c: WireCtx,
  principal: Principal,
  body: ChatBody,
  last: unknown,
): Promise<Response> {
  const message = validate(assistantMessageSchema, last, 'body.messages[-1]');
  const decisions = approvalResponsesOf(message.parts);
  if (decisions.length === 0) {
    throw new WireError(
      'validation_failed',
      'body.messages[-1]: an assistant message is read only for its tool approval responses (parts in state approval-responded); send a user message instead',
    );
  }
  const threadId = threadIdOf(body, 'to answer approvals');
  const run = await ctx.runs.latestRun(principal.subject, threadId);
  if (!run) throw new WireError('not_found', 'No such thread.');
  // Where the client's stream ended, when its message does not say: what was streamed until now.
  const streamed = await ctx.runs.chunkCount(run.id);
  await decideInBand(ctx, principal.subject, threadId, decisions);
  return follow(ctx, c, run.id, threadId, resumeCursor(message.metadata, run.id, streamed));
}

/**
 * The approvals answered in the message's tool parts (each id once), with a denial's reason;
 * other parts are not read.
 */
function approvalResponsesOf(parts: unknown[]): Decision[] {
  const decisions = new Map<string, Decision>();
  parts.forEach((part, index) => {
    if ((part as { state?: unknown } | null)?.state !== 'approval-responded') return;
    const { approval } = validate(approvalResponseSchema, part, `body.messages[-1].parts.${index}`);
    if (decisions.has(approval.id)) return;
    const reason = approval.approved ? undefined : approval.reason?.trim();
    decisions.set(approval.id, {
      id: approval.id,
      decision: approval.approved ? 'approve' : 'deny',
      ...(reason ? { reason } : {}),
    });
  });
  return [...decisions.values()];
}

/** `resumeAfter` of the message's metadata when it is a cursor of this run, else `streamed`. */
function resumeCursor(metadata: unknown, runId: string, streamed: number): number {
  const { runId: named, resumeAfter } = (metadata ?? {}) as { runId?: unknown; resumeAfter?: unknown };
  const valid =
    named === runId &&
    Number.isInteger(resumeAfter) &&
    (resumeAfter as number) >= 0 &&
    (resumeAfter as number) <= streamed;
  return valid ? (resumeAfter as number) : streamed;
}

function threadIdOf(body: ChatBody, purpose: string): string {
  if (!body.id)
    throw new WireError('validation_failed', `body.id: the chat's thread id is required ${purpose}`);
  return body.id;
}

/** Where the body holds the user's message, as refusals name it. */
function messageField(body: ChatBody): string {
  return body.message === undefined ? 'body.messages[-1]' : 'body.message';
}

function userMessageOf(body: ChatBody): UIMessage {
  if (typeof body.message === 'string') {
    return {
      id: body.messageId ?? newId('msg'),
      role: 'user',
      parts: [{ type: 'text', text: body.message }],
    };
  }
  const candidate = body.message ?? body.messages?.at(-1);
  if (candidate === undefined) {
    throw new WireError(
      'validation_failed',
      'body.message: send the user message as text, or useChat’s messages',
    );
  }
  const where = messageField(body);
  const parsed = validate(userMessageSchema, candidate, where);
  // useChat's edit (`sendMessage({ text, messageId })`) sends the edited message under the id it
  // replaces, and names that id as `messageId` too.
  if (body.messageId !== undefined && parsed.id !== undefined && parsed.id !== body.messageId) {
    throw new WireError(
      'validation_failed',
      `body.messageId: names the message to edit, and ${where}.id (${parsed.id}) is not it; send the edited message under the id it replaces`,
    );
  }
  // As a blank `message` string is: a message of blank text and no file says nothing.
  if (parsed.parts.every((part) => part.type === 'text' && part.text.trim() === '')) {
    throw new WireError('validation_failed', `${where}.parts: the message has no text and no file`);
  }
  return {
    id: parsed.id ?? body.messageId ?? newId('msg'),
    role: 'user',
    parts: parsed.parts,
    ...(parsed.metadata !== undefined ? { metadata: parsed.metadata } : {}),
  };
}

/**
 * The message's file parts as stored: a data URL becomes one of the user's files (its part then
 * keeps the file's URL), a stored file's URL must name one of the user's own. Other URLs are
 * refused: the server never fetches a URL a client names.
 */
async function storeAttachments(
  ctx: WireContext,
  principal: Principal,
  message: UIMessage,
  field: string,
): Promise<UIMessage> {
  const files = ctx.files;
  if (!files || !message.parts.some((p) => p.type === 'file')) return message;
  const parts: UIMessage['parts'] = [];
  for (const [index, part] of message.parts.entries()) {
    if (part.type !== 'file') {
      parts.push(part);
      continue;
    }
    const where = `${field}.parts.${index}.url`;
    const data = part.url.startsWith('data:') ? decodeDataUrl(part.url) : null;
    if (part.url.startsWith('data:') && !data) {
      throw new WireError('validation_failed', `${where}: a malformed data URL.`);
    }
    let file: FileSummary | null;
    if (data) {
      if (data.bytes.byteLength > ctx.maxFileBytes) {
        throw new WireError(
          'payload_too_large',
          `${where}: the file is larger than ${ctx.maxFileBytes} bytes.`,
        );
      }
      file = await files.create(principal.subject, {
        name: part.filename ?? 'file',
        mediaType: part.mediaType || data.mediaType,
        body: once(data.bytes),
      });
    } else {
      const id = files.idInUrl(part.url);
      if (!id) {
        throw new WireError(
          'validation_failed',
          `${where}: send the file as a data URL, or upload it (POST /files) and send its content URL.`,
        );
      }
      file = await files.get(principal.subject, id);
      if (!file) throw new WireError('validation_failed', `${where}: no such file.`);
    }
    parts.push({ ...part, url: files.contentUrl(file.id), mediaType: file.mediaType, filename: file.name });
  }
  return { ...message, parts };
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
