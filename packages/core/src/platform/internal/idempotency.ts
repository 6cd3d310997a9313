import type { Context } from 'hono';
import { flatError } from '../../http/errors.js';
import { hashSecret } from '../../identity/keys.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/** How long a key's answer is replayed. */
const RECORD_TTL_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** The status of a reservation whose request is still running. */
const IN_PROGRESS = 0;

export interface IdempotentResult {
  status: number;
  body: unknown;
}

/**
 * Runs a creating request once per `Idempotency-Key` (per tenant and route): the same key with the
 * same body replays the first answer (marked `Idempotent-Replayed: true`); with another body, or
 * while the first request still runs, it is a 409. The key is reserved before the work runs, so
 * two racing retries do not both create. Server faults are not remembered, so they can be retried.
 *
 * @see platform-spec.md "Conventions" (Idempotency-Key), docs/decisions.md "Idempotency"
 */
export async function withIdempotency(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  tenantId: string,
  scope: string,
  request: unknown,
  run: () => Promise<IdempotentResult>,
): Promise<Response> {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return respond(c, await run(), false);
  if (!KEY_PATTERN.test(key)) {
    return flatError(400, 'Idempotency-Key must be 1 to 255 visible ASCII characters', {
      code: 'INVALID_REQUEST',
    });
  }
  const requestHash = hashSecret(JSON.stringify(request));
  const since = new Date(Date.now() - RECORD_TTL_MS);
  await ctx.db
    .deleteFrom('idempotency_records')
    .where('tenant_id', '=', tenantId)
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('created_at', '<', since)
    .execute();
  const reserved = await ctx.db
    .insertInto('idempotency_records')
    .values({ tenant_id: tenantId, scope, key, request_hash: requestHash, status: IN_PROGRESS, body: '' })
    .onConflict((oc) => oc.columns(['tenant_id', 'scope', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  if (!reserved) {
    const earlier = await ctx.db
      .selectFrom('idempotency_records')
      .select(['request_hash', 'status', 'body'])
      .where('tenant_id', '=', tenantId)
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!earlier || earlier.request_hash !== requestHash) {
      return flatError(409, 'This Idempotency-Key was used with a different request', {
        code: 'IDEMPOTENCY_CONFLICT',
      });
    }
    if (earlier.status === IN_PROGRESS) {
      return flatError(409, 'A request with this Idempotency-Key is still in progress', {
        code: 'IDEMPOTENCY_CONFLICT',
      });
    }
    return respond(c, { status: earlier.status, body: JSON.parse(earlier.body) }, true);
  }
  const forget = () =>
    ctx.db
      .deleteFrom('idempotency_records')
      .where('tenant_id', '=', tenantId)
      .where('scope', '=', scope)
      .where('key', '=', key)
      .execute();
  let result: IdempotentResult;
  try {
    result = await run();
  } catch (error) {
    await forget();
    throw error;
  }
  if (result.status >= 500) await forget();
  else {
    await ctx.db
      .updateTable('idempotency_records')
      .set({ status: result.status, body: JSON.stringify(result.body) })
      .where('tenant_id', '=', tenantId)
      .where('scope', '=', scope)
      .where('key', '=', key)
      .execute();
  }
  return respond(c, result, false);
}

function respond(c: Context, result: IdempotentResult, replayed: boolean): Response {
  return c.json(result.body, result.status as 200, replayed ? { 'idempotent-replayed': 'true' } : {});
}
