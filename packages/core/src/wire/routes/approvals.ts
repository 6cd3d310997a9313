/**
 * Approvals and grants. A decision batch is all or nothing; `remember` turns an approval into a
 * grant (scope `tool` or `input`, for `ttlSeconds`). `?org=` and an `org` field are refused:
 * organizations need the cloud capability. Decisions that come in band (the AI SDK's approval
 * responses on `POST /chat`) go through the same store function and audit (`decideInBand`).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Decision } from '../../agent/approvals.js';
import { DEFAULT_GRANT_TTL_SECONDS, grantView, MAX_GRANT_TTL_SECONDS } from '../../agent/grants.js';
import type { Grant } from '../../agent/tools.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireCtx, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { jsonBody, noFields, principalOf, queryOf, refuseOrg, validate } from '../request.js';

/**
 * An approval's reason, shown back to the model. A message's text has no cap of its own: the
 * last message may be as large as `maxBodyBytes` (the body reader refuses more with 413).
 */
export const MAX_REASON = 100_000;

const rememberOptions = z.strictObject({
  scope: z.enum(['tool', 'input']).default('tool'),
  ttlSeconds: z.number().int().min(60).max(MAX_GRANT_TTL_SECONDS).default(DEFAULT_GRANT_TTL_SECONDS),
});

/**
 * `true` (the tool, for the default time), `false` (not remembered, as if absent), or the scope
 * and time. Read by the value's type rather than as a union, so a refusal names the field at
 * fault (`body.remember.scope: ...`) instead of a bare "Invalid input".
 */
const rememberSchema = z.unknown().transform((value, ctx) => {
  if (value === true) return { scope: 'tool' as const, ttlSeconds: DEFAULT_GRANT_TTL_SECONDS };
  if (value === false) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be true, false or { scope, ttlSeconds }' });
    return z.NEVER;
  }
  const parsed = rememberOptions.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  }
  return z.NEVER;
});

// Strict, as every body the wire defines: a misspelt field (`remeber`) is refused, never
// dropped, so an approval meant to be remembered is not decided without its grant.
const decisionSchema = z.strictObject({
  decision: z.enum(['approve', 'deny']),
  remember: rememberSchema.optional(),
  // A denial's reason, shown to the model as an in-band denial's is (ignored for an approval).
  reason: z
    .string()
    .max(MAX_REASON)
    .transform((text) => text.trim() || undefined)
    .optional(),
});

const batchSchema = z.strictObject({
  decisions: z
    .array(decisionSchema.extend({ id: z.string().min(1).max(64) }))
    .min(1)
    .max(50),
});

const listQuery = z.object({
  status: z.enum(['pending', 'executed', 'declined', 'expired', 'dropped']).optional(),
  limit: wholeNumber(1, 100).default(50),
});

export function approvalRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  const decide = async (c: WireCtx, owner: string, decisions: Decision[]) => {
    const ids = new Set(decisions.map((d) => d.id));
    if (ids.size !== decisions.length)
      throw new WireError('validation_failed', 'body.decisions: an id appears twice');
    const result = await ctx.approvals.decide(owner, decisions);
    if (!result.ok) {
      throw result.reason === 'not_found'
        ? new WireError('not_found', `No such approval: ${result.id}. Nothing was decided.`)
        : new WireError(
            'approval_not_pending',
            `Approval ${result.id} is no longer pending. Nothing was decided.`,
          );
    }
    recordDecisions(ctx, owner, decisions, result.grants);
    const approvals = await Promise.all(decisions.map((d) => ctx.approvals.get(owner, d.id)));
    return c.json({ approvals, grants: result.grants.map(grantView) });
  };

  app.get('/approvals', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const approvals = await ctx.approvals.list(principal.subject, {
      limit: query.limit,
      ...(query.status ? { status: query.status } : {}),
    });
    return c.json({ approvals });
  });

  app.post('/approvals/decide', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, batchSchema.extend({ org: z.unknown().optional() }));
    refuseOrg(c, body);
    return decide(c, principal.subject, body.decisions);
  });

  app.get('/approvals/:id', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const approval = await ctx.approvals.get(principal.subject, c.req.param('id'));
    if (!approval) throw new WireError('not_found', 'No such approval.');
    return c.json({ approval });
  });

  app.post('/approvals/:id/decide', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, decisionSchema.extend({ org: z.unknown().optional() }));
    refuseOrg(c, body);
    return decide(c, principal.subject, [{ id: c.req.param('id'), ...body }]);
  });

  app.get('/grants', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const grants = await ctx.grants.list(principal.subject);
    return c.json({ grants: grants.map(grantView) });
  });

  app.delete('/grants/:id', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await ctx.grants.revoke(principal.subject, id))) throw new WireError('not_found', 'No such grant.');
    ctx.audit.record(principal.subject, 'grant.revoked', { grantId: id });
    return c.json({ revoked: true, id });
  });

  return app;
}

function recordDecisions(ctx: WireContext, owner: string, decisions: Decision[], grants: Grant[]): void {
  for (const d of decisions) {
    ctx.audit.record(owner, 'approval.decided', { approvalId: d.id, decision: d.decision });
  }
  for (const grant of grants) {
    ctx.audit.record(owner, 'grant.created', { grantId: grant.id, tool: grant.tool, scope: grant.scope });
  }
}

/**
 * Decisions that came in band, on a chat request: the pending ones are decided as one batch, as
 * `POST /approvals/decide` does. One already decided (the same way through this API, or the
 * other way), expired or dropped is left as it is: the stream shows what really happened. An id
 * the user has no approval of on this thread is a 404: the request streams this thread's run, so
 * deciding another thread's call from it would run that call out of sight.
 */
export async function decideInBand(
  ctx: WireContext,
  owner: string,
  threadId: string,
  decisions: Decision[],
): Promise<void> {
  // Another request may decide one of them between the read and the batch: then read again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const views = await Promise.all(decisions.map((d) => ctx.approvals.get(owner, d.id)));
    const unknown = decisions.find((_, i) => views[i]?.threadId !== threadId);
    if (unknown) {
      throw new WireError(
        'not_found',
        `No such approval on thread ${threadId}: ${unknown.id}. Nothing was decided.`,
      );
    }
    // Pending without a request is approved and running: nothing left to decide.
    const pending = decisions.filter((_, i) => views[i]?.status === 'pending' && views[i]?.request);
    if (pending.length === 0) return;
    const result = await ctx.approvals.decide(owner, pending);
    if (result.ok) {
      recordDecisions(ctx, owner, pending, result.grants);
      return;
    }
  }
}
