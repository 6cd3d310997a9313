import type { Context } from 'hono';
import { NO_STORE } from '../../http/errors.js';
import { hashSecret } from '../../identity/keys.js';
import { writeNowOrOnceBack } from '../../store/availability.js';
import { IDEMPOTENCY_IN_PROGRESS } from '../../store/idempotency.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError, refusalOf } from '../errors.js';

/** How long a key's answer is replayed. */
const RECORD_TTL_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentResult {
  status: number;
  body: unknown;
}

/**
 * Whose `Idempotency-Key` it is: the app of an App Key, or a signed-in user, in their tenant. A key
 * is one client's retry token, so two callers who happen to choose the same key each get their own
 * answer, never the other's.
 */
export type IdempotencyOwner = { tenantId: string } & ({ appId: string } | { userId: string });

/**
 * Runs a creating request once per `Idempotency-Key` (per caller and route): the same key with the
 * same body replays the first answer (marked `Idempotent-Replayed: true`); with another body, or
 * while the first request still runs, it is a 409. The key is reserved before the work runs, so
 * two racing retries do not both create. A refusal `run` throws (a `ConnectionError`, say) is an
 * answer like any and is remembered; server faults are not, so they can be retried.
 *
 * With `sealed`, the remembered answer is sealed at rest (it carries a secret shown once, such as
 * an App Key); it needs the platform's sealer.
 *
 * @see docs/decisions.md "Idempotency"
 */
export async function withIdempotency(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  owner: IdempotencyOwner,
  route: string,
  request: unknown,
  run: (retryKey: string | null) => Promise<IdempotentResult>,
  options: { sealed?: boolean } = {},
): Promise<Response> {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return respond(c, await answerOf(() => run(null)), false);
  if (!KEY_PATTERN.test(key)) {
    throw new PlatformError(400, 'Idempotency-Key must be 1 to 255 visible ASCII characters', {
      code: 'INVALID_REQUEST',
    });
  }
  const records = ctx.idempotency;
  const id = recordId(owner, route, key);
  const requestHash = hashSecret(JSON.stringify(request));
  await records.expire(id, new Date(Date.now() - RECORD_TTL_MS));
  if (!(await records.reserve(id, requestHash))) {
    const earlier = await records.find(id);
    if (!earlier || earlier.requestHash !== requestHash) {
      throw new PlatformError(409, 'This Idempotency-Key was used with a different request', {
        code: 'IDEMPOTENCY_CONFLICT',
      });
    }
    if (earlier.status === IDEMPOTENCY_IN_PROGRESS) {
      // Unlike another body under the key, this one passes: sent again shortly, it is the replay.
      throw new PlatformError(409, 'A request with this Idempotency-Key is still in progress', {
        code: 'IDEMPOTENCY_CONFLICT',
        headers: { 'retry-after': '1' },
      });
    }
    const stored = options.sealed ? openBody(ctx, id, earlier.body) : earlier.body;
    return respond(c, { status: earlier.status, body: JSON.parse(stored) }, true);
  }
  // What a retry of a request that failed (a 5xx, the record released) runs again with: the same
  // value, so work it hands on (a charge at the payment processor) is the processor's same work.
  const retryKey = hashSecret(`${id.tenantId}\n${id.scope}\n${id.key}`);
  let result: IdempotentResult;
  try {
    result = await answerOf(() => run(retryKey));
  } catch (error) {
    await releaseRecord(ctx, id);
    throw error;
  }
  if (result.status >= 500) await releaseRecord(ctx, id);
  else {
    const body = JSON.stringify(result.body);
    const answer = { status: result.status, body: options.sealed ? sealBody(ctx, id, body) : body };
    await settleRecord(() => records.complete(id, answer));
  }
  return respond(c, result, false);
}

/** How long a key's record is written again, in the background, while the store is away. */
const RECORD_RETRY_MS = 60_000;

/**
 * Releases or completes a key's reservation. When the store is away (a blink cut the request),
 * the caller's answer is the 503 it fails with, and the write is tried again in the background
 * until the store is back: a reservation left in progress would answer every retry of the key
 * 409 for a day. Released, the retry runs afresh; completed, it replays the answer.
 */
function settleRecord(write: () => Promise<void>): Promise<void> {
  return writeNowOrOnceBack(write, RECORD_RETRY_MS);
}

/**
 * Releases a reservation whose request did not act (refused, or failed), so the same key sent
 * again acts; while the store is away, once it is back (see `settleRecord`).
 */
export function releaseRecord(ctx: PlatformContext, id: RecordId): Promise<void> {
  return settleRecord(() => ctx.idempotency.forget(id));
}

type RecordId = { tenantId: string; scope: string; key: string };
const recordId = (owner: IdempotencyOwner, route: string, key: string): RecordId => {
  const caller = 'appId' in owner ? `app:${owner.appId}` : `user:${owner.userId}`;
  return { tenantId: owner.tenantId, scope: `${route} ${caller}`, key };
};

/**
 * Whether the request's `Idempotency-Key` is one `owner` already sent on `route` (its answer
 * remembered, or its request still running): sent again, it replays or is told to wait, and
 * runs nothing.
 */
export async function isKnownIdempotencyKey(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  owner: IdempotencyOwner,
  route: string,
): Promise<boolean> {
  const key = c.req.header('idempotency-key');
  if (key === undefined || !KEY_PATTERN.test(key)) return false;
  const id = recordId(owner, route, key);
  await ctx.idempotency.expire(id, new Date(Date.now() - RECORD_TTL_MS));
  return Boolean(await ctx.idempotency.find(id));
}
const bodyAad = (id: RecordId) => `idempotency:${id.tenantId}:${id.scope}:${id.key}`;

function sealBody(ctx: PlatformContext, id: RecordId, body: string): string {
  if (!ctx.sealer) throw new Error('A sealed idempotent answer needs the platform sealer');
  return ctx.sealer.seal(body, bodyAad(id));
}

function openBody(ctx: PlatformContext, id: RecordId, stored: string): string {
  if (!ctx.sealer) throw new Error('A sealed idempotent answer needs the platform sealer');
  return ctx.sealer.open(stored, bodyAad(id));
}

/** What `run` answers, a refusal it throws included (as its flat body). */
async function answerOf(run: () => Promise<IdempotentResult>): Promise<IdempotentResult> {
  try {
    return await run();
  } catch (error) {
    const refusal = refusalOf(error);
    if (!refusal) throw error;
    const { code } = refusal.options;
    return { status: refusal.status, body: { message: refusal.message, ...(code ? { code } : {}) } };
  }
}

/** An answer created once (it may carry a secret shown once) and its replays: never cached. */
function respond(c: Context, result: IdempotentResult, replayed: boolean): Response {
  const headers = replayed ? { ...NO_STORE, 'idempotent-replayed': 'true' } : NO_STORE;
  return c.json(result.body, result.status as 200, headers);
}
