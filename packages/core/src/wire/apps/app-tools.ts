/**
 * The agent's apps tools (`service_make`, `service_apps_*`): build, edit, list, open, pin and
 * call the person's apps, over the `AppStore` and the document checks. The same tools serve the
 * embedded agent and the MCP door; every call acts for `context.principal` only.
 *
 * A build never saves a refused document and never places an unsaved one: the slot keeps what it
 * held. `service_make` answers a receipt of words, never the document.
 *
 * @see docs/apps.md "Tools"
 */
import { parsePartialJson } from 'ai';
import { z } from 'zod';
import { newId } from '../../agent/ids.js';
import { type HostToolDeps, toolErrorText } from '../../agent/tool-call.js';
import {
  type AnyHostTool,
  defineTool,
  type ToolContext,
  type ToolInputStream,
  type ToolRegistry,
} from '../../agent/tools.js';
import {
  APP_DOCUMENT_LIMITS,
  type AppDocument,
  contentHash,
  type Problem,
  partialDocument,
} from '../../apps/index.js';
import { withinLimit } from '../../internal/within-limit.js';
import type { AppReplayer } from '../options.js';
import { appKit, type DocumentChecker, documentChecker } from './app-checks.js';
import { problemWords, type RebaseDeps, rebasePin, stopWords } from './app-replay.js';
import type { Seed } from './app-seeds.js';
import { pressButton } from './app-serving.js';
import type { AppStore, AppWithDocument, Slot } from './app-store.js';

/** The data part an app paints in the chat: one per app, replaced in place as the build goes on. */
export const APP_DATA_PART = 'data-service-app' as const;

/** What the chat's app part holds. */
export type AppPart =
  /** Building: `document` once it passed the schema checks (still to run and save), else null. */
  | { state: 'streaming'; appId: string; title: string | null; document: AppDocument | null }
  | { state: 'final'; appId: string; title: string; version: number; document: AppDocument }
  /** A refused or broken build: nothing is painted, the reason is said. */
  | { state: 'failed'; appId: string; title: string | null; reason: string }
  /**
   * A preview painted under the id a new app would get, when the input then named an app to
   * edit (`appId` written after `document`): no app was ever built there, the client shows nothing.
   */
  | { state: 'withdrawn'; appId: string };

/** `service_make`'s answer: four fields of words. */
export interface MakeReceipt {
  status: 'built' | 'edited' | 'failed';
  /** The app's name. */
  app: string;
  /** Where it shows: the slot it was placed in, or `your apps`. */
  where: string;
  /** What happened, in a sentence: the version and app id, or why it failed. */
  note: string;
}

export interface AppToolsDeps {
  store: AppStore;
  /** The host's tools (never the service's own): queries and button calls reach these. */
  hostTools: ToolRegistry;
  /** What a tool call needs: grants and the activity record. */
  calls: HostToolDeps;
  /** The product's name, for the door's app-open card. */
  productName?: string;
  /** Where a person opens an app in a browser, for the door's app-open card; null when unknown. */
  appUrl?: (appId: string) => string | null;
  /** The host's seeds (`apps.seeds`): a remix's current baseline is its component's seed. */
  seeds?: ReadonlyMap<string, Seed>;
  /** How `service_apps_rebase_pin` replays a remix's wishes (`apps.replay`, else the model's). */
  replay?: AppReplayer;
  /** How long a build's checks may take before it fails (`apps.buildTimeLimitMs`). */
  buildTimeLimitMs?: number;
  /** How long a rebase's whole replay may take (`apps.rebaseTimeLimitMs`). */
  rebaseTimeLimitMs?: number;
}

const WISH = z.string().trim().min(1).max(2000).describe('what the person asked for, in their words');
const APP_ID = z.string().min(1).max(64).describe('the app id (app_...), from service_apps_list');
const DOCUMENT = z
  .record(z.string(), z.unknown())
  .describe('the app document: { version: 1, title, queries?, state?, root } built from the Kit');

/** The service's own apps tools. */
export function appTools(deps: AppToolsDeps): AnyHostTool[] {
  const checker = documentChecker(deps.hostTools, deps.calls);
  const builder = new AppBuilder(deps.store, checker, deps.buildTimeLimitMs ?? DEFAULT_BUILD_TIME_LIMIT_MS);
  const rebaseDeps: RebaseDeps = {
    store: deps.store,
    seeds: deps.seeds ?? new Map(),
    replay: deps.replay ?? (async () => Promise.reject(new Error('no replayer is configured'))),
    checker,
    ...(deps.rebaseTimeLimitMs ? { timeLimitMs: deps.rebaseTimeLimitMs } : {}),
    audit: deps.calls.audit,
  };
  return [
    defineTool({
      name: 'service_make',
      title: 'Make an app',
      description:
        'Builds a new app, or a new version of one (appId), from an app document, and optionally places it in a slot on a host page (slot ids come from service_apps_slots). The document is checked against the host tools and one real run of each query; a refused document saves nothing. Answers a receipt of words; the screen appears in the chat and on the person’s page.',
      // The app id comes before the document: a preview knows whose part it paints.
      input: z.object({
        wish: WISH,
        appId: APP_ID.optional(),
        slot: z.string().min(1).max(128).optional().describe('a slot id from service_apps_slots'),
        name: z.string().trim().min(1).max(120).optional().describe('the app’s name; default: the title'),
        document: DOCUMENT,
      }),
      risk: 'write',
      inputStream: builder.inputStream('make'),
      execute: (input, context) => builder.make(input, context),
    }),
    defineTool({
      name: 'service_apps_create',
      title: 'Create an app',
      description:
        'Saves a new app from an app document, after the same checks as service_make. Answers a receipt naming the new app’s id.',
      input: z.object({
        wish: WISH.optional(),
        name: z.string().trim().min(1).max(120).optional(),
        document: DOCUMENT,
      }),
      risk: 'write',
      inputStream: builder.inputStream('create'),
      execute: (input, context) => builder.make(input, context),
    }),
    defineTool({
      name: 'service_apps_edit',
      title: 'Edit an app',
      description:
        'Saves a new version of one of the person’s apps from a whole new app document (read the current one with service_apps_open), after the same checks as service_make.',
      input: z.object({ appId: APP_ID, wish: WISH, document: DOCUMENT }),
      risk: 'write',
      inputStream: builder.inputStream('edit'),
      execute: (input, context) => builder.make(input, context),
    }),
    defineTool({
      name: 'service_apps_rebase_pin',
      title: 'Update a remix',
      description:
        'Moves the person’s remix of a host component onto the component’s current version: the service rebuilds it from the component’s current seed with every wish of its trail replayed, one at a time, and saves it as one new version, the trail kept. All or nothing: a wish that cannot be replayed saves nothing. fromVersion (optional) is the version the person saw; the update is refused if the app moved past it. Only when the person asked for it.',
      input: z.object({
        appId: APP_ID,
        fromVersion: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe('the app version the person saw (service_apps_open); default its current one'),
      }),
      risk: 'write',
      execute: (input, context) => rebaseReceipt(rebaseDeps, input, context),
    }),
    defineTool({
      name: 'service_apps_list',
      title: 'List apps',
      description: 'Lists the person’s apps (id, name, kind, version) and the slots each is placed in.',
      input: z.object({}),
      risk: 'read',
      execute: async (_input, context) => {
        const owner = context.principal.subject;
        const [apps, placements] = await Promise.all([
          deps.store.listApps(owner),
          deps.store.placements(owner),
        ]);
        return {
          apps: apps.map((app) => ({
            id: app.id,
            name: app.name,
            kind: app.kind,
            version: app.version,
            slots: placements.filter((p) => p.appId === app.id).map((p) => p.slotId),
          })),
        };
      },
    }),
    defineTool({
      name: 'service_apps_open',
      title: 'Open an app',
      description:
        'Opens one of the person’s apps: its current document, version, wish trail and slots, and shows it in the chat.',
      input: z.object({ appId: APP_ID }),
      risk: 'read',
      execute: async ({ appId }, context) => {
        const owner = context.principal.subject;
        const app = await deps.store.getApp(owner, appId);
        if (!app) throw new Error(`No app ${appId}: service_apps_list lists the person’s apps.`);
        if (context.via === 'door') {
          const url = deps.appUrl?.(app.id) ?? null;
          if (url) return appOpenCard(deps.productName ?? 'MCP server', app.name, url);
        }
        const [trail, placements] = await Promise.all([
          deps.store.trail(owner, appId),
          deps.store.placements(owner),
        ]);
        await context.writeData?.({
          type: APP_DATA_PART,
          id: app.id,
          data: {
            state: 'final',
            appId: app.id,
            title: app.name,
            version: app.version,
            document: app.current.document as AppDocument,
          } satisfies AppPart,
        });
        return {
          id: app.id,
          name: app.name,
          kind: app.kind,
          version: app.version,
          document: app.current.document,
          wishes: (trail ?? []).map((w) => w.wish),
          slots: placements.filter((p) => p.appId === app.id).map((p) => p.slotId),
        };
      },
    }),
    defineTool({
      name: 'service_apps_call',
      title: 'Press an app’s button',
      description:
        'Calls the host tool behind one of an app’s buttons, with the button’s input (its bound fields filled in). Only a call some button of the app makes is allowed; approvals apply as to any tool call.',
      input: z.object({
        appId: APP_ID,
        tool: z.string().min(1).max(64),
        input: z.record(z.string(), z.unknown()).default({}),
      }),
      // The button's tool decides: the call waits for approval whenever that tool would.
      needsApproval: async ({ tool, input }, context) => {
        const target = deps.hostTools.get(tool);
        return target?.enabled ? target.needsApproval(input, context) : false;
      },
      execute: (input, context) => callButton(deps, input, context),
    }),
    defineTool({
      name: 'service_apps_pin',
      title: 'Pin an app',
      description:
        'Places one of the person’s apps in a slot on a host page (slot ids come from service_apps_slots), replacing what they had there.',
      input: z.object({ appId: APP_ID, slot: z.string().min(1).max(128) }),
      risk: 'write',
      execute: async ({ appId, slot }, context) => {
        const owner = context.principal.subject;
        const known = await findSlot(deps.store, slot);
        if (!known) throw new Error(await unknownSlot(deps.store, slot));
        const placed = await deps.store.place(owner, known.id, appId);
        if (!placed) throw new Error(`No app ${appId}: service_apps_list lists the person’s apps.`);
        return { placed: appId, slot: known.id, where: slotWords(known), replaced: placed.evicted };
      },
    }),
    defineTool({
      name: 'service_apps_unpin',
      title: 'Unpin an app',
      description: 'Empties one of the person’s slots; the host’s own content shows there again.',
      input: z.object({ slot: z.string().min(1).max(128) }),
      risk: 'write',
      execute: async ({ slot }, context) => {
        const removed = await deps.store.unplace(context.principal.subject, slot);
        return { slot, removed };
      },
    }),
    defineTool({
      name: 'service_apps_kit',
      title: 'App building blocks',
      description:
        'Lists what an app document may use: the Kit’s components with the JSON Schema of their props, and the host’s tools (which may back a query, and the schema of what each returns). Read it before building with service_make.',
      input: z.object({}),
      risk: 'read',
      execute: async () => appKit(deps.hostTools),
    }),
    defineTool({
      name: 'service_apps_slots',
      title: 'List slots',
      description:
        'Lists the slots host pages offer (id, page, label) and the app the person placed in each. Use these ids; never invent one.',
      input: z.object({}),
      risk: 'read',
      execute: async (_input, context) => {
        const [slots, placements] = await Promise.all([
          deps.store.listSlots(),
          deps.store.placements(context.principal.subject),
        ]);
        const placedIn = new Map(placements.map((p) => [p.slotId, p.appId]));
        return {
          slots: slots.map((slot) => ({
            id: slot.id,
            page: slot.page,
            label: slot.label,
            app: placedIn.get(slot.id) ?? null,
          })),
        };
      },
    }),
  ];
}

/** How often at most a build in progress repaints its preview while the model writes the document. */
export const PREVIEW_INTERVAL_MS = 80;

/**
 * The most input text a preview reads: twice the largest document the build accepts, so a valid
 * input always previews whole; past it previews stop (each parses all the text so far) and the
 * build refuses the oversized document as usual.
 */
export const PREVIEW_TEXT_MAX = 2 * APP_DOCUMENT_LIMITS.maxBytes;

/** How long a build's checks may take by default (`apps.buildTimeLimitMs`). */
export const DEFAULT_BUILD_TIME_LIMIT_MS = 20_000;

/** How long a draft whose call never came is kept. */
const DRAFT_TTL_MS = 15 * 60 * 1000;

/** What a build's preview knows while the model still writes the call's input. */
interface Draft {
  startedAt: number;
  owner: string;
  /** The id a new app gets: fixed when the input starts, so the preview and the build share it. */
  newId: string;
  /** The part the preview paints, once the document began; null until then. */
  partId: string | null;
  /** The app an edit previews over (its last good version is what a refusal shows again). */
  existing: AppWithDocument | null;
  /** The preview stopped for good (an app not the person's, or the build took over). */
  closed: boolean;
  painted: boolean;
  lastPaintAt: number;
  /** Paints in order; the build waits for it before painting its own states. */
  queue: Promise<void>;
}

/** Which of the building tools a call is: what its input may say about the app. */
type BuildTool = 'make' | 'create' | 'edit';

/** Builds and edits: check, save, then place, painting the chat's app part as it goes. */
class AppBuilder {
  private readonly drafts = new Map<string, Draft>();

  constructor(
    private readonly store: AppStore,
    private readonly checker: DocumentChecker,
    private readonly timeLimitMs: number,
  ) {}

  /**
   * The preview while the model writes the input: the partial document, parsed and reduced to a
   * paintable tree, painted as `streaming` under the part id the build will use, at most once per
   * `PREVIEW_INTERVAL_MS`. An edit previews only over an app of the person's.
   */
  inputStream(tool: BuildTool): ToolInputStream {
    return {
      maxText: PREVIEW_TEXT_MAX,
      start: (context) => {
        const key = draftKey(context);
        if (!key) return;
        this.forgetStaleDrafts();
        this.drafts.set(key, {
          startedAt: Date.now(),
          owner: context.principal.subject,
          newId: newId('app'),
          partId: null,
          existing: null,
          closed: false,
          painted: false,
          lastPaintAt: 0,
          queue: Promise.resolve(),
        });
      },
      delta: (text, context) => {
        const draft = this.drafts.get(draftKey(context) ?? '');
        if (!draft || draft.closed) return;
        const now = Date.now();
        if (now - draft.lastPaintAt < PREVIEW_INTERVAL_MS) return;
        draft.lastPaintAt = now;
        // Not awaited: the model's stream goes on while the preview paints.
        draft.queue = draft.queue.then(() => this.preview(tool, draft, text, context)).catch(() => {});
      },
      end: async (context) => {
        const draft = await this.takeDraft(context);
        if (draft?.painted && draft.partId) await this.unpaint(draft, draft.partId, context);
      },
    };
  }

  /** Drafts no build and no end ever took (a turn that crashed mid-input) are dropped after a while. */
  private forgetStaleDrafts(): void {
    const before = Date.now() - DRAFT_TTL_MS;
    for (const [key, draft] of this.drafts) {
      if (draft.startedAt < before) {
        draft.closed = true;
        this.drafts.delete(key);
      }
    }
  }

  private async preview(tool: BuildTool, draft: Draft, text: string, context: ToolContext): Promise<void> {
    const { value } = await parsePartialJson(text);
    if (draft.closed || !isRecord(value) || !Object.hasOwn(value, 'document')) return;
    if (draft.partId === null) {
      // The app id is usually written before the document, so it is whole by now; when it comes
      // later the preview was a guess, which the build withdraws.
      const appId = tool === 'create' ? undefined : value.appId;
      if (typeof appId === 'string') {
        draft.existing = await this.store.getApp(draft.owner, appId);
        // Never paint over an app that is not the person's: the build will say it is missing.
        if (!draft.existing) {
          draft.closed = true;
          return;
        }
        draft.partId = draft.existing.id;
      } else if (tool === 'edit') {
        return;
      } else {
        draft.partId = draft.newId;
      }
    }
    const document = partialDocument(value.document);
    if (draft.closed) return;
    const title = document?.title || null;
    draft.painted = true;
    await painter(context, draft.partId)({ state: 'streaming', appId: draft.partId, title, document });
  }

  /** The call's draft, its preview stopped and its last paint landed. */
  private async takeDraft(context: ToolContext): Promise<Draft | null> {
    const key = draftKey(context);
    const draft = key ? this.drafts.get(key) : undefined;
    if (!draft || !key) return null;
    this.drafts.delete(key);
    draft.closed = true;
    await draft.queue;
    return draft;
  }

  /** Ends a preview no build follows: an edit shows its last good version again, a new app fails. */
  private async unpaint(draft: Draft, partId: string, context: ToolContext): Promise<void> {
    const paint = painter(context, partId);
    if (draft.existing?.id === partId) await paint(lastGood(draft.existing));
    else
      await paint({
        state: 'failed',
        appId: partId,
        title: null,
        reason: 'the app’s document could not be read',
      });
  }

  async make(
    input: { wish?: string; document: Record<string, unknown>; appId?: string; slot?: string; name?: string },
    context: ToolContext,
  ): Promise<MakeReceipt> {
    const owner = context.principal.subject;
    const draft = await this.takeDraft(context);
    const existing = input.appId ? await this.store.getApp(owner, input.appId) : null;
    const givenTitle = typeof input.document.title === 'string' ? input.document.title : null;
    const name = input.name ?? existing?.name ?? givenTitle ?? 'Untitled app';
    const appId = existing?.id ?? draft?.newId ?? newId('app');
    // A preview guessed a new app (the document came before `appId`): it is withdrawn, never
    // left as a failure beside the edit. Any other preview under another part than the build's
    // (the input changed its mind) ends as a refusal does.
    if (draft?.painted && draft.partId === draft.newId && input.appId !== undefined) {
      await painter(context, draft.newId)({ state: 'withdrawn', appId: draft.newId });
    } else if (draft?.painted && draft.partId && draft.partId !== appId) {
      await this.unpaint(draft, draft.partId, context);
    }
    if (input.appId && !existing) {
      // No part is painted: a failed answer never says whether another person's app exists.
      return failed(name, 'your apps', `no app ${input.appId} among the person’s apps (service_apps_list)`);
    }
    const paint = painter(context, appId);
    let painted: AppPart['state'] | null = null;
    const show = async (part: AppPart) => {
      painted = part.state;
      await paint(part);
    };
    /**
     * A refusal paints nothing new: a new app's part ends failed (no tree), an edit's part shows
     * the app's last good version again, so what the person saw stays.
     */
    const endRefused = async (reason: string) => {
      if (existing) await show(lastGood(existing));
      else await show({ state: 'failed', appId, title: givenTitle, reason });
    };
    let building: Slot | null = null;
    try {
      if (!draft?.painted || draft.partId !== appId) {
        await show({ state: 'streaming', appId, title: givenTitle, document: null });
      } else painted = 'streaming';
      const slot = input.slot ? await findSlot(this.store, input.slot) : null;
      const where = slot ? slotWords(slot) : 'your apps';
      const refuse = async (reason: string) => {
        await endRefused(reason);
        return failed(name, where, reason);
      };
      if (input.slot && !slot) return await refuse(await unknownSlot(this.store, input.slot));
      if (slot) {
        await this.store.startSlotBuild(owner, slot.id, appId);
        building = slot;
      }
      const schemas = this.checker.validate(input.document);
      if (!schemas.ok) return await refuse(refusal(schemas.problems));
      await show({ state: 'streaming', appId, title: schemas.document.title, document: schemas.document });
      const checked = await withinLimit(
        (signal) => this.checker.check(schemas.document, { ...context, signal }),
        {
          signal: context.signal,
          limitMs: this.timeLimitMs,
          reason: `the build's checks took longer than ${seconds(this.timeLimitMs)}`,
        },
      );
      if (checked === 'timed-out') {
        return await refuse(
          `the build timed out: its checks took longer than ${seconds(this.timeLimitMs)}; nothing saved`,
        );
      }
      if (!checked.ok) return await refuse(refusal(checked.problems));
      const document = checked.document;
      const version = {
        document,
        contentHash: contentHash(document),
        ...(input.wish ? { wish: input.wish } : {}),
      };
      let number: number;
      if (existing) {
        const saved = await this.store.addVersion(owner, existing.id, version);
        if (!saved) return await refuse('the app was deleted while it was being edited');
        number = saved.version;
      } else {
        number = (await this.store.createApp(owner, { id: appId, name, ...version })).version;
      }
      let placedNote = '';
      if (slot) {
        const placed = await this.store.place(owner, slot.id, appId);
        if (!placed) return await refuse('the app was deleted before it could be placed');
        if (placed.evicted) placedNote = `, replacing ${placed.evicted} there`;
      }
      await show({ state: 'final', appId, title: document.title, version: number, document });
      return {
        status: existing ? 'edited' : 'built',
        app: name,
        where,
        note: `saved as version ${number} of ${appId}${placedNote}`,
      };
    } finally {
      if (building) await this.store.endSlotBuild(owner, building.id, appId).catch(() => {});
      // A build that broke on the way never leaves a spinner behind.
      if (painted === 'streaming') await endRefused('the build stopped');
    }
  }
}

/** The key of a call's draft: its run and tool call (absent outside a turn, so no preview). */
function draftKey(context: ToolContext): string | null {
  return context.toolCallId ? `${context.runId ?? ''}\n${context.toolCallId}` : null;
}

/** The app's current version as its `final` part: what a refused edit paints again. */
function lastGood(app: AppWithDocument): AppPart {
  return {
    state: 'final',
    appId: app.id,
    title: app.name,
    version: app.version,
    document: app.current.document as AppDocument,
  };
}

function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `rebasePin`'s outcome as `service_apps_rebase_pin`'s receipt of words. */
async function rebaseReceipt(
  deps: RebaseDeps,
  input: { appId: string; fromVersion?: number | undefined },
  context: ToolContext,
): Promise<MakeReceipt> {
  const outcome = await rebasePin(deps, input, context);
  const where = 'your apps';
  switch (outcome.status) {
    case 'rebased':
      return {
        status: 'edited',
        app: outcome.app.name,
        where,
        note: `rebased as version ${outcome.app.version} of ${outcome.app.id}, ${outcome.replayed} wish${outcome.replayed === 1 ? '' : 'es'} replayed`,
      };
    case 'not_found':
      return failed(input.appId, where, `no app ${input.appId} among the person’s apps (service_apps_list)`);
    case 'not_a_remix':
      return failed(outcome.app.name, where, `${outcome.app.id} is not a remix of a host component`);
    case 'baseline_unknown':
      return failed(
        outcome.app.name,
        where,
        `no seed of ${outcome.app.baselineKey} is known any more: there is nothing to update onto`,
      );
    case 'not_drifted':
      return failed(outcome.app.name, where, 'the remix is already on the current baseline');
    case 'moved':
      return failed(
        outcome.app.name,
        where,
        'the app changed since that version: open it again and update from its current version',
      );
    case 'failed':
      return failed(outcome.app.name, where, stopWords(outcome.stop));
  }
}

function failed(app: string, where: string, note: string): MakeReceipt {
  return { status: 'failed', app, where, note };
}

function painter(context: ToolContext, appId: string): (part: AppPart) => Promise<void> {
  return async (part) => {
    await context.writeData?.({ type: APP_DATA_PART, id: appId, data: part });
  };
}

/** A refusal's problems in one line the model can act on. */
function refusal(problems: Problem[]): string {
  return `refused, nothing saved: ${problemWords(problems)}`;
}

async function findSlot(store: AppStore, id: string): Promise<Slot | null> {
  return (await store.listSlots()).find((slot) => slot.id === id) ?? null;
}

async function unknownSlot(store: AppStore, id: string): Promise<string> {
  const ids = (await store.listSlots()).map((slot) => slot.id);
  return `no slot ${JSON.stringify(id)}; the slots are ${ids.length ? ids.slice(0, 20).join(', ') : 'none yet'} (service_apps_slots)`;
}

function slotWords(slot: Slot): string {
  return `${slot.label} on ${slot.page}`;
}

/** The door's answer for an app a browser opens: a versioned card, and the same in words. */
function appOpenCard(product: string, app: string, url: string) {
  return {
    card: { type: 'service.app-open', version: 1, product, app, url },
    text: `Open ${app} in ${product}: ${url}`,
  };
}

/**
 * One button press (`pressButton`'s rule). The approval the outer call waited for stands for this
 * one; a grant on `service_apps_call` does not.
 */
async function callButton(
  deps: AppToolsDeps,
  call: { appId: string; tool: string; input: Record<string, unknown> },
  context: ToolContext,
): Promise<unknown> {
  const pressed = await pressButton(deps, call, context, async () =>
    // Reached only when the button's tool needs approval: the person approved this very call,
    // unless a grant on the apps tool let it through, which must not stand for any button's tool.
    context.grant ? null : { markExecuted: async () => {} },
  );
  switch (pressed.status) {
    case 'no-app':
      throw new Error(`No app ${call.appId}: service_apps_list lists the person’s apps.`);
    case 'no-button':
      throw new Error(`${pressed.app.name} has no button that calls ${call.tool} with that input.`);
    case 'no-tool':
      throw new Error(`${call.tool} is not a host tool any more.`);
  }
  const { tool, outcome } = pressed;
  switch (outcome.status) {
    case 'ok':
      return outcome.output;
    case 'invalid-input':
      throw new Error(`Invalid input for ${call.tool}: ${outcome.message}`);
    case 'approval-required':
      throw new Error(`${tool.title} needs the person’s approval for this call.`);
    case 'no-credentials':
      throw new Error(`${tool.title} could not get the host credentials to run.`);
    case 'failed':
      throw new Error(toolErrorText(outcome.error));
  }
}
