/**
 * The apps routes (mounted unless `apps: false`): the person's apps (list, read, delete, history,
 * fork, export), where they placed them (`/apps/placements`), the slots host pages report
 * (`/slots`), and the review of review-kind remixes (`/apps/review-queue`, reviewers only).
 *
 * The fixed words after `/apps/` (`seed`, `placements`, `import`, `review-queue`) are registered
 * before `/apps/:id*`, so none is ever read as an app id. Another person's app answers exactly as
 * a missing one does. The routes that need the app document model (import, seed, open, call,
 * rebase-pin) answer 501 `not_implemented`.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Principal } from '../../agent/tools.js';
import { APP_EXPORT_MEDIA_TYPE, appExport } from '../apps/app-export.js';
import type { AppRecord, AppVersion, Slot } from '../apps/app-store.js';
import type { WireApps, WireContext, WireCtx, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { jsonBody, principalOf, queryOf, userOf, validate } from '../request.js';

/** What `newId('app')` makes, with room to spare; anything else is no app of anyone's. */
const APP_ID = /^app_[A-Za-z0-9_-]{1,64}$/;
const slotId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'must be 1-128 of A-Z a-z 0-9 . _ : - (starting with a letter or digit)',
  );
const page = z.string().trim().min(1).max(500);
const appId = z.string().min(1).max(100);
const contentHash = z.string().min(1).max(200);

const listQuery = z.object({ limit: z.coerce.number().int().min(1).max(200).default(100) });
const pageQuery = z.object({ page: page.optional() });
const queueQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) });
const forkBody = z.strictObject({ name: z.string().trim().min(1).max(200).optional() });
const placeBody = z.strictObject({ slot: slotId, appId });
const unplaceBody = z.strictObject({ slot: slotId });
const reportBody = z.strictObject({
  page,
  slots: z
    .array(z.strictObject({ id: slotId, label: z.string().trim().min(1).max(200) }))
    .min(1)
    .max(50),
});
const approveBody = z.strictObject({ contentHash });
const rejectBody = z.strictObject({
  contentHash,
  note: z.string().trim().min(1, 'a note saying why is required').max(2000),
});

/** The document-model routes, not offered yet. */
const NOT_YET = ['/apps/:id/open', '/apps/:id/call', '/apps/:id/rebase-pin'] as const;

export function appRoutes(ctx: WireContext, apps: WireApps): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const store = apps.store;

  // --- Fixed words first: never an app id.

  app.post('/apps/seed', notImplemented);
  app.post('/apps/import', notImplemented);

  app.get('/apps/placements', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(pageQuery, queryOf(c), 'query');
    const listed = new Map((await store.listSlots()).map((slot) => [slot.id, slot]));
    const placements = (await store.placements(principal.subject)).filter((placement) => {
      const slot = listed.get(placement.slotId);
      return slot !== undefined && (query.page === undefined || slot.page === query.page);
    });
    return c.json({
      placements: placements.map((p) => ({ slot: p.slotId, appId: p.appId, placedAt: p.placedAt })),
    });
  });

  app.put('/apps/placements', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, placeBody);
    if (!(await store.listSlots()).some((slot) => slot.id === body.slot)) throw noSuchSlot(body.slot);
    if (!APP_ID.test(body.appId)) throw noSuchApp();
    const placed = await store.place(principal.subject, body.slot, body.appId);
    if (!placed) throw noSuchApp();
    ctx.audit.record(principal.subject, 'app.placed', {
      appId: body.appId,
      slot: body.slot,
      evicted: placed.evicted,
    });
    return c.json({ slot: body.slot, appId: body.appId, evicted: placed.evicted });
  });

  app.delete('/apps/placements', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, unplaceBody);
    const removed = await store.unplace(principal.subject, body.slot);
    if (removed) ctx.audit.record(principal.subject, 'app.unplaced', { appId: removed, slot: body.slot });
    return c.json({ slot: body.slot, removed });
  });

  app.get('/apps/review-queue', async (c) => {
    await reviewerOf(c);
    const query = validate(queueQuery, queryOf(c), 'query');
    return c.json({ queue: await store.reviewQueue(query.limit) });
  });

  app.get('/apps/review-queue/:id', async (c) => {
    await reviewerOf(c);
    const item = APP_ID.test(c.req.param('id')) ? await store.reviewItem(c.req.param('id')) : null;
    if (!item) throw noSuchReview();
    return c.json({ item });
  });

  app.post('/apps/review-queue/:id/approve', async (c) => {
    const reviewer = await reviewerOf(c);
    const body = await jsonBody(ctx, c, approveBody);
    return decided(c, reviewer, 'approved', null, (id) =>
      store.approve(id, body.contentHash, reviewer.subject),
    );
  });

  app.post('/apps/review-queue/:id/reject', async (c) => {
    const reviewer = await reviewerOf(c);
    const body = await jsonBody(ctx, c, rejectBody);
    return decided(c, reviewer, 'rejected', body.note, (id) =>
      store.reject(id, body.contentHash, body.note, reviewer.subject),
    );
  });

  // Any other method or deeper path under a fixed word is no route (and never an app's).
  for (const word of ['seed', 'import', 'placements', 'review-queue']) {
    app.all(`/apps/${word}`, noRoute);
    app.all(`/apps/${word}/*`, noRoute);
  }

  // --- The person's apps.

  app.get('/apps', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const list = await store.listApps(principal.subject, query.limit);
    return c.json({ apps: list.map(appJson) });
  });

  app.get('/apps/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const found = await ownApp(principal, c.req.param('id'));
    return c.json({
      app: {
        ...appJson(found),
        current: { ...versionJson(found.current), document: found.current.document },
      },
    });
  });

  app.delete('/apps/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const id = c.req.param('id');
    const deleted = APP_ID.test(id) ? await store.deleteApp(principal.subject, id) : null;
    if (!deleted) throw noSuchApp();
    ctx.audit.record(principal.subject, 'app.deleted', { appId: id, clearedSlots: deleted.clearedSlots });
    return c.json({ deleted: true, id, clearedSlots: deleted.clearedSlots });
  });

  app.get('/apps/:id/history', async (c) => {
    const principal = await principalOf(ctx, c);
    const id = c.req.param('id');
    const versions = APP_ID.test(id) ? await store.history(principal.subject, id) : null;
    if (!versions) throw noSuchApp();
    return c.json({ versions: versions.map(versionJson) });
  });

  app.post('/apps/:id/fork', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, forkBody);
    const id = c.req.param('id');
    const fork = APP_ID.test(id) ? await store.forkApp(principal.subject, id, body.name) : null;
    if (!fork) throw noSuchApp();
    ctx.audit.record(principal.subject, 'app.forked', { appId: fork.id, forkedFrom: id });
    return c.json(
      {
        app: { ...appJson(fork), current: { ...versionJson(fork.current), document: fork.current.document } },
      },
      201,
    );
  });

  app.get('/apps/:id/export', async (c) => {
    const principal = await principalOf(ctx, c);
    const found = await ownApp(principal, c.req.param('id'));
    return c.body(JSON.stringify(appExport(found, new Date())), 200, {
      'content-type': APP_EXPORT_MEDIA_TYPE,
      'content-disposition': `attachment; filename="${found.id}.service-app.json"`,
      'cache-control': 'no-store',
    });
  });

  for (const path of NOT_YET) app.all(path, notImplemented);

  // --- Slots host pages offer.

  app.post('/slots', async (c) => {
    await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, reportBody);
    // A declared slot is the configuration's: a page's report cannot move or relabel it.
    const declared = new Set(
      (await store.listSlots()).filter((slot) => slot.declared).map((slot) => slot.id),
    );
    const reported = body.slots.filter((slot) => !declared.has(slot.id));
    await store.reportSlots(body.page, reported);
    return c.json({ reported: [...new Set(reported.map((slot) => slot.id))] });
  });

  app.get('/slots', async (c) => {
    await principalOf(ctx, c);
    const query = validate(pageQuery, queryOf(c), 'query');
    const slots = (await store.listSlots()).filter(
      (slot) => query.page === undefined || slot.page === query.page,
    );
    return c.json({ slots: slots.map(slotJson) });
  });

  return app;

  async function ownApp(principal: Principal, id: string) {
    const found = APP_ID.test(id) ? await store.getApp(principal.subject, id) : null;
    if (!found) throw noSuchApp();
    return found;
  }

  /** The signed-in user, if the composition's `apps.reviewer` names them; anonymous visitors never. */
  async function reviewerOf(c: WireCtx): Promise<Principal> {
    const user = await userOf(ctx, c);
    if (user.kind === 'anonymous' || !apps.reviewer || !(await apps.reviewer(user))) {
      throw new WireError(
        'reviewer_required',
        apps.reviewer
          ? 'Only reviewers may review apps.'
          : 'Nobody may review apps: this composition names no reviewers (createService({ apps: { reviewer } })).',
      );
    }
    return user;
  }

  async function decided(
    c: WireCtx,
    reviewer: Principal,
    status: 'approved' | 'rejected',
    note: string | null,
    decide: (id: string) => ReturnType<typeof store.approve>,
  ) {
    const id = c.req.param('id') ?? '';
    // The owner, read before the decision: the queue names whose app this is.
    const item = APP_ID.test(id) ? await store.reviewItem(id) : null;
    const outcome = APP_ID.test(id) ? await decide(id) : ({ ok: false, reason: 'not_found' } as const);
    if (!outcome.ok) {
      if (outcome.reason === 'stale') {
        throw new WireError(
          'review_stale',
          "The app has changed since: that content hash is not its current version's. Review the current version.",
        );
      }
      if (outcome.reason === 'not_pending') {
        throw new WireError(
          'review_not_pending',
          'This version of the app was already approved or rejected.',
        );
      }
      throw noSuchReview();
    }
    ctx.audit.record(reviewer.subject, 'app.review.decided', {
      appId: id,
      version: outcome.version,
      decision: status,
      ...(item ? { owner: item.owner } : {}),
    });
    if (item) ctx.audit.record(item.owner, `app.${status}`, { appId: id, version: outcome.version });
    return c.json({ appId: id, version: outcome.version, status, note });
  }
}

function appJson(record: AppRecord) {
  return {
    id: record.id,
    name: record.name,
    kind: record.kind,
    baselineKey: record.baselineKey,
    baselineHash: record.baselineHash,
    forkedFrom: record.forkedFrom,
    version: record.version,
    servedVersion: record.servedVersion,
    approvedHash: record.approvedHash,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

function versionJson(version: AppVersion) {
  return {
    version: version.version,
    contentHash: version.contentHash,
    review: version.review,
    createdAt: version.createdAt,
  };
}

function slotJson(slot: Slot) {
  return {
    id: slot.id,
    page: slot.page,
    label: slot.label,
    declared: slot.declared,
    reportedAt: slot.reportedAt,
  };
}

/** One answer for a missing app and for another person's, so neither can be told from the other. */
function noSuchApp(): WireError {
  return new WireError('not_found', 'No such app.');
}

function noSuchReview(): WireError {
  return new WireError('not_found', 'No such app waiting for review.');
}

function noSuchSlot(slot: string): WireError {
  return new WireError(
    'not_found',
    `No such slot: ${JSON.stringify(slot)} is not listed (host pages report their slots with POST /slots).`,
  );
}

function noRoute(): never {
  throw new WireError('route_not_found', 'No such route.');
}

function notImplemented(): never {
  throw new WireError(
    'not_implemented',
    'This apps route is not available in this composition yet: it needs the app document model.',
  );
}
