/**
 * The apps routes (mounted unless `apps: false`): the person's apps (list, read, delete, history,
 * fork, export, import), their remixes of the host's components (`/apps/seed`), where they placed
 * them (`/apps/placements`), the slots host pages report (`/slots`), and the review of
 * review-kind remixes (`/apps/review-queue`, reviewers only).
 *
 * `GET /apps?component=<key>` lists only the person's remix of that host component (at most one),
 * so a `<Remixable>` finds it without reading every app.
 *
 * The fixed words after `/apps/` (`seed`, `placements`, `import`, `review-queue`) are registered
 * before `/apps/:id*`, so none is ever read as an app id. Another person's app answers exactly as
 * a missing one does. Opening an app runs its queries as the person; a button press goes through
 * the same rule and guarded path as the agent's `service_apps_call`. `rebase-pin` moves a remix
 * onto its component's current seed with its trail replayed (`rebasePin`, the same engine as the
 * agent's `service_apps_rebase_pin`). Every app answered says whether it `drifted` from its seed.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { toolErrorText } from '../../agent/tool-call.js';
import type { Principal, ToolContext } from '../../agent/tools.js';
import {
  APP_DOCUMENT_LIMITS,
  type AppDocument,
  contentHash as hashOf,
  validateDocument,
} from '../../apps/index.js';
import { wholeNumber } from '../../http/whole-number.js';
import { appToolCatalog, documentChecker, runQueries } from '../apps/app-checks.js';
import { APP_EXPORT_MEDIA_TYPE, appExport } from '../apps/app-export.js';
import { APP_ID, APP_IMPORT_MAX_BYTES, appImportFile } from '../apps/app-import.js';
import { rebasePin } from '../apps/app-replay.js';
import type { Seed } from '../apps/app-seeds.js';
import { pressButton, servedApp } from '../apps/app-serving.js';
import {
  type AppRecord,
  type AppVersion,
  type AppWithDocument,
  type Slot,
  slotBuildMaxAgeMs,
} from '../apps/app-store.js';
import type { WireApps, WireContext, WireCtx, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { SLOT_ID, SLOT_ID_RULE } from '../options.js';
import {
  jsonBody,
  noFields,
  presentCredentials,
  principalOf,
  queryOf,
  userOf,
  validate,
} from '../request.js';

const slotId = z.string().regex(SLOT_ID, SLOT_ID_RULE);
const page = z.string().trim().min(1).max(500);
const appId = z.string().min(1).max(100);
const contentHash = z.string().min(1).max(200);

const listQuery = z.object({
  limit: wholeNumber(1, 200).default(100),
  component: slotId.optional(),
});
const pageQuery = z.object({ page: page.optional() });
const queueQuery = z.object({ limit: wholeNumber(1, 100).default(50) });
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
const seedBody = z.strictObject({ component: slotId, slot: slotId.optional() });
/** The JSON nesting an import body may have: a document's own, inside the file's object. */
const IMPORT_MAX_DEPTH = APP_DOCUMENT_LIMITS.maxJsonDepth + 1;
const approveBody = z.strictObject({ contentHash });
const openBody = z.strictObject({});
const callBody = z.strictObject({
  tool: z.string().min(1).max(64),
  input: z.record(z.string(), z.unknown()).default({}),
});
const rejectBody = z.strictObject({
  contentHash,
  note: z.string().trim().min(1, 'a note saying why is required').max(2000),
});

/** How often an instance deletes expired slot reports and stale build records. */
const SLOT_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

const rebaseBody = z.strictObject({ fromVersion: z.number().int().min(1).optional() });

export function appRoutes(ctx: WireContext, apps: WireApps): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const store = apps.store;
  const checker = documentChecker(ctx.tools, ctx);
  const appJson = (record: AppRecord) => appJsonOf(record, apps.seeds);
  const fullAppJson = (found: AppWithDocument) => fullAppJsonOf(found, apps.seeds);

  // Expired slot reports and the build records a stopped process left behind are deleted as pages
  // report their slots, at most once per interval on this instance, off the request's path.
  let lastSweep = 0;
  const sweepNowAndThen = () => {
    if (Date.now() - lastSweep < SLOT_SWEEP_INTERVAL_MS) return;
    lastSweep = Date.now();
    store.sweepSlots(slotBuildMaxAgeMs(apps.buildTimeLimitMs)).catch((error: unknown) => {
      ctx.logger.warn('apps: sweeping expired slots failed', { error: (error as Error)?.message });
    });
  };

  // --- Fixed words first: never an app id.

  app.post('/apps/seed', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, seedBody);
    const seed = apps.seeds.get(body.component);
    if (!seed) throw noSuchComponent(body.component, [...apps.seeds.keys()]);
    if (body.slot !== undefined && !(await isListed(body.slot))) throw noSuchSlot(body.slot);
    const { app: remix, created } = await store.remixFor(principal.subject, {
      name: seed.name,
      kind: seed.kind,
      baselineKey: seed.component,
      baselineHash: seed.hash,
      document: seed.document,
      contentHash: seed.hash,
    });
    if (created) {
      ctx.audit.record(principal.subject, 'app.seeded', { appId: remix.id, component: seed.component });
    }
    const placed = body.slot === undefined ? null : await place(principal, body.slot, remix.id);
    return c.json({ app: fullAppJson(remix), created, ...(placed ? { placed } : {}) }, created ? 201 : 200);
  });

  app.post('/apps/import', async (c) => {
    const principal = await principalOf(ctx, c);
    const file = await jsonBody(ctx, c, appImportFile, {
      maxBytes: APP_IMPORT_MAX_BYTES,
      maxDepth: IMPORT_MAX_DEPTH,
    });
    const checked = validateDocument(file.document, { tools: appToolCatalog(ctx.tools) });
    if (!checked.ok) {
      throw new WireError(
        'app_invalid',
        `The app's document is refused: ${checked.problems.length} problem${checked.problems.length === 1 ? '' : 's'} (listed in problems).`,
        { fields: { problems: checked.problems } },
      );
    }
    const version = { document: checked.document, contentHash: hashOf(checked.document) };
    const provenance = file.source ? { forkedFrom: file.source.appId } : {};
    let imported: AppWithDocument;
    let created = true;
    if (file.kind === 'app') {
      imported = await store.createApp(principal.subject, {
        name: file.name,
        ...version,
        ...provenance,
        ...(file.baseline ? { baselineKey: file.baseline.key, baselineHash: file.baseline.hash } : {}),
      });
    } else {
      // One remix per person per component: an import of a component the person already remixed
      // answers their remix, unchanged.
      ({ app: imported, created } = await store.remixFor(principal.subject, {
        name: file.name,
        kind: file.kind,
        baselineKey: file.baseline!.key,
        baselineHash: file.baseline!.hash,
        ...version,
        ...provenance,
      }));
    }
    if (created) {
      ctx.audit.record(principal.subject, 'app.imported', {
        appId: imported.id,
        kind: imported.kind,
        ...(file.source ? { forkedFrom: file.source.appId } : {}),
      });
    }
    return c.json({ app: fullAppJson(imported), created }, created ? 201 : 200);
  });

  app.get('/apps/placements', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(pageQuery, queryOf(c), 'query');
    const listed = new Map((await store.listSlots()).map((slot) => [slot.id, slot]));
    const onPage = (slotId: string) => {
      const slot = listed.get(slotId);
      return slot !== undefined && (query.page === undefined || slot.page === query.page);
    };
    const [placements, builds] = await Promise.all([
      store.placements(principal.subject),
      store.slotBuilds(principal.subject, slotBuildMaxAgeMs(apps.buildTimeLimitMs)),
    ]);
    return c.json({
      placements: placements
        .filter((p) => onPage(p.slotId))
        .map((p) => ({ slot: p.slotId, appId: p.appId, placedAt: p.placedAt })),
      // Builds the agent is running into the person's slots: the slot says so until they end.
      building: builds
        .filter((b) => onPage(b.slotId))
        .map((b) => ({ slot: b.slotId, appId: b.appId, since: b.startedAt })),
    });
  });

  app.put('/apps/placements', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, placeBody);
    if (!(await isListed(body.slot))) throw noSuchSlot(body.slot);
    if (!APP_ID.test(body.appId)) throw noSuchApp();
    return c.json(await place(principal, body.slot, body.appId));
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
    const list = await store.listApps(principal.subject, query.limit, { component: query.component });
    return c.json({ apps: list.map(appJson) });
  });

  app.get('/apps/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const found = await ownApp(principal, c.req.param('id'));
    return c.json({ app: fullAppJson(found) });
  });

  app.delete('/apps/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
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
    return c.json({ app: fullAppJson(fork) }, 201);
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

  app.post('/apps/:id/open', async (c) => {
    const principal = await principalOf(ctx, c);
    await jsonBody(ctx, c, openBody);
    const id = c.req.param('id');
    const served = APP_ID.test(id) ? await servedApp(store, principal.subject, id) : null;
    if (!served) throw noSuchApp();
    const { app: record, serving, version } = served;
    const ran = version
      ? await runQueries(
          ctx.tools,
          ctx,
          // Stored documents passed the checks when saved; the queries are all that is read here.
          version.document as unknown as AppDocument,
          toolContext(c, principal, c.req.raw.signal),
          { via: 'app-open', appId: record.id },
        )
      : { results: {}, problems: [] };
    return c.json({
      app: appJson(record),
      serving,
      document: version?.document ?? null,
      version: version?.version ?? null,
      contentHash: version?.contentHash ?? null,
      queries: ran.results,
      problems: ran.problems,
    });
  });

  app.post('/apps/:id/call', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, callBody);
    const id = c.req.param('id');
    if (!APP_ID.test(id)) throw noSuchApp();
    // The press runs to its end once started, as a drained tool call does: a closed tab does not cut it.
    const context = toolContext(c, principal, new AbortController().signal);
    // Nobody is there to answer an approval over HTTP: only a remembered grant lets such a call run.
    const pressed = await pressButton(
      { store, hostTools: ctx.tools, calls: ctx },
      { appId: id, ...body },
      context,
      async () => null,
    );
    switch (pressed.status) {
      case 'no-app':
        throw noSuchApp();
      case 'no-button':
        throw new WireError(
          'app_call_refused',
          `${pressed.app.name} has no button that calls ${body.tool} with that input.`,
        );
      case 'no-tool':
        throw new WireError('app_call_refused', `${body.tool} is not one of the host's tools any more.`);
    }
    const { tool, outcome } = pressed;
    switch (outcome.status) {
      case 'ok':
        return c.json({ tool: tool.name, output: outcome.output ?? null });
      case 'invalid-input':
        throw new WireError('validation_failed', `body.input: ${outcome.message}`);
      case 'approval-required':
        throw new WireError(
          'approval_required',
          `${tool.title} needs the person's approval for this call: press it through the assistant in the chat, which asks for it.`,
        );
      case 'no-credentials':
      case 'failed':
        throw new WireError(
          'tool_failed',
          `${tool.title} failed: ${toolErrorText(outcome.status === 'failed' ? outcome.error : null)}`,
        );
    }
  });

  app.post('/apps/:id/rebase-pin', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, rebaseBody);
    const id = c.req.param('id');
    if (!APP_ID.test(id)) throw noSuchApp();
    const outcome = await rebasePin(
      {
        store,
        seeds: apps.seeds,
        replay: apps.replay,
        checker,
        audit: ctx.audit,
        timeLimitMs: apps.rebaseTimeLimitMs,
      },
      { appId: id, fromVersion: body.fromVersion },
      toolContext(c, principal, c.req.raw.signal),
    );
    switch (outcome.status) {
      case 'rebased':
        return c.json({ app: fullAppJson(outcome.app), replayed: outcome.replayed });
      case 'not_found':
        throw noSuchApp();
      case 'not_a_remix':
        throw new WireError(
          'not_a_remix',
          'This app is not a remix of a host component: it has no baseline to update onto.',
        );
      case 'baseline_unknown':
        throw new WireError(
          'baseline_unknown',
          `No seed names ${JSON.stringify(outcome.app.baselineKey)} any more: there is no current baseline to update onto.`,
        );
      case 'not_drifted':
        throw new WireError('not_drifted', 'The remix is already on its component’s current baseline.');
      case 'moved':
        throw new WireError(
          'app_moved',
          `The app changed since that version: its current version is ${outcome.app.version}. Read it again and retry.`,
        );
      case 'failed': {
        const { replayed, failed, remaining, wish, reason } = outcome.stop;
        throw new WireError(
          'rebase_failed',
          `Wish ${replayed + 1} of ${replayed + failed + remaining} could not be replayed (${reason}); nothing was saved.`,
          { fields: { replayed, failed, remaining, wish } },
        );
      }
    }
  });

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
    sweepNowAndThen();
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

  async function isListed(slot: string): Promise<boolean> {
    return (await store.listSlots()).some((listed) => listed.id === slot);
  }

  /** Places the person's app in a listed slot; the answer says what it evicted. */
  async function place(principal: Principal, slot: string, appId: string) {
    const placed = await store.place(principal.subject, slot, appId);
    if (!placed) throw noSuchApp();
    ctx.audit.record(principal.subject, 'app.placed', { appId, slot, evicted: placed.evicted });
    return { slot, appId, evicted: placed.evicted };
  }

  /** What a host tool run from this request receives: the person, and their own credentials ("present" mode). */
  function toolContext(c: WireCtx, principal: Principal, signal: AbortSignal): ToolContext {
    const credentials = presentCredentials(ctx, c.req.raw);
    return { principal, via: 'agent', signal, ...(credentials ? { credentials } : {}) };
  }

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

/**
 * A remix drifted when the host's current seed of its component is not the one it was built on;
 * a plain app, or a remix of a component no seed names any more, never did.
 */
function driftedOf(record: AppRecord, seeds: ReadonlyMap<string, Seed>): boolean {
  if (record.kind === 'app' || record.baselineKey === null) return false;
  const seed = seeds.get(record.baselineKey);
  return seed !== undefined && seed.hash !== record.baselineHash;
}

function appJsonOf(record: AppRecord, seeds: ReadonlyMap<string, Seed>) {
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
    drifted: driftedOf(record, seeds),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** An app with its current version and that version's document. */
function fullAppJsonOf(app: AppWithDocument, seeds: ReadonlyMap<string, Seed>) {
  return {
    ...appJsonOf(app, seeds),
    current: { ...versionJson(app.current), document: app.current.document },
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

function noSuchComponent(component: string, known: string[]): WireError {
  return new WireError(
    'not_found',
    `No such component to remix: ${JSON.stringify(component)} is not among the host's seeds (${
      known.length > 0 ? known.join(', ') : 'it declares none: createService({ apps: { seeds } })'
    }).`,
  );
}

function noRoute(): never {
  throw new WireError('route_not_found', 'No such route.');
}
