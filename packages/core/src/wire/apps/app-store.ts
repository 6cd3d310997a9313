/**
 * Where wire apps are kept: each person's apps (`app_...`) with their capped version history and
 * edit trail, the slots host pages offer, the app each person placed in each slot, and the review
 * of review-kind remixes.
 *
 * A document is stored as given, with the content hash its caller computed: checking it is not
 * this module's business (a refused document never reaches it). Every read and write a person
 * makes names its owner (the subject the host's `principal()` returned), and another owner's app
 * answers exactly as a missing one does. Reviewers work across owners (`reviewQueue`, `approve`,
 * `reject`); who may review is the caller's decision.
 *
 * @see docs/storage.md
 */
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { newId } from '../../agent/ids.js';
import { appDocument, toolsOf } from '../../apps/index.js';
import type {
  Database,
  WireAppKind,
  WireAppReviewStatus,
  WireAppsTable,
  WireAppVersionsTable,
} from '../../store/database.js';

/**
 * Versions kept per app: the newest 20 (an edit session's worth of undo), plus the version a
 * reviewer approved, which keeps serving however many versions follow it.
 */
export const APP_HISTORY_LIMIT = 20;

/**
 * How much longer than the build time limit a slot build's record counts as in flight: the record
 * starts before the checks the limit times (and the save and placement follow them).
 */
export const SLOT_BUILD_MARGIN_MS = 10_000;

/** The age past which a slot build's record is gone, for a build time limit of `limitMs`. */
export function slotBuildMaxAgeMs(limitMs: number): number {
  return limitMs + SLOT_BUILD_MARGIN_MS;
}

/** How many wishes an app's trail keeps: the newest; a rebase replays at most these. */
export const APP_TRAIL_LIMIT = 50;
/**
 * How long a slot a page reported stays listed without being reported again: 7 days, so a page
 * visited weekly keeps its slots, and a slot removed from the host's pages is gone within a week.
 * Declared slots do not expire.
 */
export const SLOT_REPORT_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export type AppDocument = Record<string, unknown>;

export interface AppRecord {
  id: string;
  owner: string;
  name: string;
  kind: WireAppKind;
  baselineKey: string | null;
  baselineHash: string | null;
  forkedFrom: string | null;
  /** The current (newest) version's number. */
  version: number;
  /** The version that serves: the current one, or for a review app the approved one (null: the host's original serves). */
  servedVersion: number | null;
  approvedHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface AppReview {
  status: WireAppReviewStatus;
  note: string | null;
  reviewedBy: string | null;
  reviewedAt: Date | null;
}

export interface AppVersion {
  version: number;
  contentHash: string;
  /** Review apps only; null for the others. */
  review: AppReview | null;
  createdAt: Date;
}

export interface AppVersionWithDocument extends AppVersion {
  document: AppDocument;
}

/** An app with its current version's document. */
export interface AppWithDocument extends AppRecord {
  current: AppVersionWithDocument;
}

export interface NewVersion {
  document: AppDocument;
  contentHash: string;
  /** The person's wish that made this version, appended to the trail in the same transaction. */
  wish?: string;
}

export interface NewApp extends NewVersion {
  /**
   * The app's id, when the caller named it before saving (a build streams under the id its app
   * will have); a fresh `app_...` otherwise.
   */
  id?: string;
  name: string;
  /** Provenance of an imported or forked app. */
  forkedFrom?: string;
  baselineKey?: string;
  baselineHash?: string;
}

export interface RemixInput extends NewVersion {
  name: string;
  kind: 'remix' | 'review';
  baselineKey: string;
  baselineHash: string;
  forkedFrom?: string;
}

export interface Wish {
  seq: number;
  wish: string;
  createdAt: Date;
}

export interface Placement {
  slotId: string;
  appId: string;
  placedAt: Date;
}

/** A build in flight that targets one of the owner's slots. */
export interface SlotBuild {
  slotId: string;
  appId: string;
  startedAt: Date;
}

export interface Slot {
  id: string;
  page: string;
  label: string;
  declared: boolean;
  reportedAt: Date | null;
}

export interface ReviewItem {
  appId: string;
  owner: string;
  name: string;
  baselineKey: string | null;
  version: number;
  contentHash: string;
  createdAt: Date;
}

export type ReviewOutcome =
  | { ok: true; version: number }
  /** `stale`: the app's current version is no longer the one with that hash; `not_pending`: already decided. */
  | { ok: false; reason: 'not_found' | 'stale' | 'not_pending' | 'note_required' };

/** What an adoption moved, and what it dropped because the user already had one of theirs. */
export interface AppAdoption {
  apps: number;
  placements: number;
  dropped: { apps: string[]; slots: string[] };
}

export type RebaseOutcome = { ok: true; version: number } | { ok: false; reason: 'not_found' | 'moved' };

type AppRow = Selectable<WireAppsTable>;
type VersionRow = Selectable<WireAppVersionsTable>;
type Db = Kysely<Database> | Transaction<Database>;

export class AppStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new app (kind `app`) with its first version, in one transaction. */
  async createApp(owner: string, input: NewApp): Promise<AppWithDocument> {
    return this.db.transaction().execute(async (trx) => {
      const app = await trx
        .insertInto('wire_apps')
        .values({
          id: input.id ?? newId('app'),
          owner,
          name: input.name,
          kind: 'app',
          baseline_key: input.baselineKey ?? null,
          baseline_hash: input.baselineHash ?? null,
          forked_from: input.forkedFrom ?? null,
          version: 1,
          created_at: this.date(),
          updated_at: this.date(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return withDocument(app, await this.insertFirstVersion(trx, app, input));
    });
  }

  /**
   * The person's remix of the host component `baselineKey`: created with its first version, or,
   * when they already have one (two remix gestures racing, say), that one, unchanged.
   */
  async remixFor(owner: string, input: RemixInput): Promise<{ app: AppWithDocument; created: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      const app = await trx
        .insertInto('wire_apps')
        .values({
          id: newId('app'),
          owner,
          name: input.name,
          kind: input.kind,
          baseline_key: input.baselineKey,
          baseline_hash: input.baselineHash,
          forked_from: input.forkedFrom ?? null,
          version: 1,
          created_at: this.date(),
          updated_at: this.date(),
        })
        // A concurrent insert of the same remix makes this one wait for it, then do nothing.
        .onConflict((oc) => oc.columns(['owner', 'baseline_key']).where('kind', '<>', 'app').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (app)
        return { app: withDocument(app, await this.insertFirstVersion(trx, app, input)), created: true };
      const existing = await trx
        .selectFrom('wire_apps')
        .selectAll()
        .where('owner', '=', owner)
        .where('baseline_key', '=', input.baselineKey)
        .where('kind', '<>', 'app')
        .executeTakeFirstOrThrow();
      return { app: withDocument(existing, await currentVersion(trx, existing)), created: false };
    });
  }

  /**
   * A new current version (the next number), trimming the history past `APP_HISTORY_LIMIT`, in one
   * transaction. A review app's new version waits for review. Null when the owner has no such app.
   */
  async addVersion(owner: string, appId: string, input: NewVersion): Promise<AppVersion | null> {
    return this.db.transaction().execute(async (trx) => {
      const app = await lockOwned(trx, owner, appId);
      if (!app) return null;
      const row = await this.insertNextVersion(trx, app, input);
      if (input.wish !== undefined) await appendTrail(trx, appId, [input.wish], this.date());
      return versionOf(row);
    });
  }

  /** The owner's app with its current document; null for a missing app and for another owner's. */
  async getApp(owner: string, appId: string): Promise<AppWithDocument | null> {
    const app = await owned(this.db, owner, appId);
    return app ? withDocument(app, await currentVersion(this.db, app)) : null;
  }

  /** One kept version of the owner's app, with its document. */
  async getVersion(owner: string, appId: string, version: number): Promise<AppVersionWithDocument | null> {
    const row = await this.db
      .selectFrom('wire_app_versions as v')
      .innerJoin('wire_apps as a', 'a.id', 'v.app_id')
      .selectAll('v')
      .where('a.owner', '=', owner)
      .where('v.app_id', '=', appId)
      .where('v.version', '=', version)
      .executeTakeFirst();
    return row ? { ...versionOf(row), document: row.document } : null;
  }

  /**
   * Across every owner (development's `/sync/impact`): how many apps' current documents call each
   * of `tools`, from a query or a button.
   */
  async countByTool(tools: string[]): Promise<Map<string, number>> {
    const counts = new Map(tools.map((tool) => [tool, 0]));
    const rows = await this.db
      .selectFrom('wire_apps as a')
      .innerJoin('wire_app_versions as v', (join) =>
        join.onRef('v.app_id', '=', 'a.id').onRef('v.version', '=', 'a.version'),
      )
      .select('v.document')
      .execute();
    for (const { document } of rows) {
      const parsed = appDocument.safeParse(document);
      if (!parsed.success) continue;
      for (const tool of toolsOf(parsed.data)) {
        const count = counts.get(tool);
        if (count !== undefined) counts.set(tool, count + 1);
      }
    }
    return counts;
  }

  /**
   * The owner's apps, most recently changed first (without documents). With `component`, only
   * their remix of that host component (remix or review kind): at most one, as `remixFor` keeps it.
   */
  async listApps(owner: string, limit = 200, filter: { component?: string } = {}): Promise<AppRecord[]> {
    let query = this.db.selectFrom('wire_apps').selectAll().where('owner', '=', owner);
    if (filter.component !== undefined) {
      query = query.where('kind', '<>', 'app').where('baseline_key', '=', filter.component);
    }
    const rows = await query.orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(recordOf);
  }

  /** The kept versions of the owner's app, newest first (without documents); null for no such app. */
  async history(owner: string, appId: string): Promise<AppVersion[] | null> {
    const app = await owned(this.db, owner, appId);
    if (!app) return null;
    const rows = await this.db
      .selectFrom('wire_app_versions')
      .selectAll()
      .where('app_id', '=', appId)
      .orderBy('version', 'desc')
      .execute();
    return rows.map(versionOf);
  }

  /**
   * Deletes the owner's app with its versions and trail, and clears the slots it was placed in,
   * in one transaction. Answers the cleared slots; null for no such app.
   */
  async deleteApp(owner: string, appId: string): Promise<{ clearedSlots: string[] } | null> {
    return this.db.transaction().execute(async (trx) => {
      // The lock makes a racing placement of this app wait, then fail its reference: it cannot
      // land after the placements are cleared.
      const app = await lockOwned(trx, owner, appId, 'delete');
      if (!app) return null;
      const cleared = await trx
        .deleteFrom('wire_placements')
        .where('app_id', '=', appId)
        .returning('slot_id')
        .execute();
      await trx.deleteFrom('wire_apps').where('id', '=', appId).execute();
      return { clearedSlots: cleared.map((row) => row.slot_id).sort() };
    });
  }

  /**
   * A copy of the owner's app under a fresh id, of kind `app`, from its current version: it
   * remembers where it came from (`forkedFrom`, and a remix's baseline) and starts a trail of its own.
   */
  async forkApp(owner: string, appId: string, name?: string): Promise<AppWithDocument | null> {
    const source = await this.getApp(owner, appId);
    if (!source) return null;
    return this.createApp(owner, {
      name: name ?? source.name,
      document: source.current.document,
      contentHash: source.current.contentHash,
      forkedFrom: source.id,
      ...(source.baselineKey && source.baselineHash
        ? { baselineKey: source.baselineKey, baselineHash: source.baselineHash }
        : {}),
    });
  }

  /**
   * Places the owner's app in a slot, replacing what the owner had there, in one upsert statement.
   * Answers the app it evicted (null: the slot was empty or held this app already), or null when
   * the owner has no such app. The evicted app is read from the row the upsert locked, so racing
   * placements each report the app they actually replaced.
   */
  async place(owner: string, slotId: string, appId: string): Promise<{ evicted: string | null } | null> {
    try {
      const row = await this.db
        .insertInto('wire_placements')
        .columns(['owner', 'slot_id', 'app_id', 'placed_at'])
        .expression((eb) =>
          eb
            .selectFrom('wire_apps')
            .select([
              sql<string>`${owner}::text`.as('owner'),
              sql<string>`${slotId}::text`.as('slot_id'),
              'id',
              sql<Date>`${this.date()}::timestamptz`.as('placed_at'),
            ])
            .where('owner', '=', owner)
            .where('id', '=', appId),
        )
        .onConflict((oc) =>
          oc.columns(['owner', 'slot_id']).doUpdateSet((eb) => ({
            app_id: eb.ref('excluded.app_id'),
            evicted_app_id: eb.ref('wire_placements.app_id'),
            placed_at: eb.ref('excluded.placed_at'),
          })),
        )
        .returning(['app_id', 'evicted_app_id'])
        .executeTakeFirst();
      if (!row) return null;
      return { evicted: row.evicted_app_id === row.app_id ? null : row.evicted_app_id };
    } catch (error) {
      // The app was deleted between the ownership read and the reference check.
      if ((error as { code?: unknown }).code === '23503') return null;
      throw error;
    }
  }

  /** Empties the owner's slot; answers the app it held, or null when it held none. */
  async unplace(owner: string, slotId: string): Promise<string | null> {
    const row = await this.db
      .deleteFrom('wire_placements')
      .where('owner', '=', owner)
      .where('slot_id', '=', slotId)
      .returning('app_id')
      .executeTakeFirst();
    return row?.app_id ?? null;
  }

  /** What the owner placed where, by slot. */
  async placements(owner: string): Promise<Placement[]> {
    const rows = await this.db
      .selectFrom('wire_placements')
      .select(['slot_id', 'app_id', 'placed_at'])
      .where('owner', '=', owner)
      .orderBy('slot_id')
      .execute();
    return rows.map((row) => ({ slotId: row.slot_id, appId: row.app_id, placedAt: row.placed_at }));
  }

  /** Records that a build of `appId` targeting the owner's slot has started. */
  async startSlotBuild(owner: string, slotId: string, appId: string): Promise<void> {
    await this.db
      .insertInto('wire_slot_builds')
      .values({ owner, slot_id: slotId, app_id: appId, started_at: new Date() })
      .onConflict((oc) => oc.columns(['owner', 'slot_id', 'app_id']).doUpdateSet({ started_at: new Date() }))
      .execute();
  }

  /** Records that the build has ended (saved or not). */
  async endSlotBuild(owner: string, slotId: string, appId: string): Promise<void> {
    await this.db
      .deleteFrom('wire_slot_builds')
      .where('owner', '=', owner)
      .where('slot_id', '=', slotId)
      .where('app_id', '=', appId)
      .execute();
  }

  /**
   * The owner's builds in flight that target a slot, oldest first; one that started more than
   * `maxAgeMs` ago is past the build time limit and counts as gone.
   */
  async slotBuilds(owner: string, maxAgeMs: number): Promise<SlotBuild[]> {
    const rows = await this.db
      .selectFrom('wire_slot_builds')
      .select(['slot_id', 'app_id', 'started_at'])
      .where('owner', '=', owner)
      .where('started_at', '>', new Date(Date.now() - maxAgeMs))
      .orderBy('started_at')
      .execute();
    return rows.map((row) => ({ slotId: row.slot_id, appId: row.app_id, startedAt: row.started_at }));
  }

  /** Slots a page reports it shows; each stays listed `SLOT_REPORT_TTL_MS` past its last report. */
  async reportSlots(page: string, slots: readonly { id: string; label: string }[]): Promise<void> {
    const rows = lastById(slots).map((slot) => ({
      id: slot.id,
      page,
      label: slot.label,
      reported_at: this.date(),
    }));
    if (rows.length === 0) return;
    await this.db
      .insertInto('wire_slots')
      .values(rows)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          page: eb.ref('excluded.page'),
          label: eb.ref('excluded.label'),
          reported_at: eb.ref('excluded.reported_at'),
        })),
      )
      .execute();
  }

  /**
   * The slots configuration declares, replacing the previous declaration: they never expire, and
   * a slot no longer declared is kept only as long as a page's report of it lasts.
   */
  async declareSlots(slots: readonly { id: string; page: string; label: string }[]): Promise<void> {
    const rows = lastById(slots).map((slot) => ({
      id: slot.id,
      page: slot.page,
      label: slot.label,
      declared: true,
    }));
    await this.db.transaction().execute(async (trx) => {
      let undeclare = trx.updateTable('wire_slots').set({ declared: false }).where('declared', '=', true);
      if (rows.length > 0)
        undeclare = undeclare.where(
          'id',
          'not in',
          rows.map((row) => row.id),
        );
      await undeclare.where('reported_at', 'is not', null).execute();
      let drop = trx.deleteFrom('wire_slots').where('declared', '=', true).where('reported_at', 'is', null);
      if (rows.length > 0)
        drop = drop.where(
          'id',
          'not in',
          rows.map((row) => row.id),
        );
      await drop.execute();
      if (rows.length === 0) return;
      await trx
        .insertInto('wire_slots')
        .values(rows)
        .onConflict((oc) =>
          oc.column('id').doUpdateSet((eb) => ({
            page: eb.ref('excluded.page'),
            label: eb.ref('excluded.label'),
            declared: true,
          })),
        )
        .execute();
    });
  }

  /** Declared slots and slots reported within the TTL, by page. */
  async listSlots(): Promise<Slot[]> {
    const rows = await this.db
      .selectFrom('wire_slots')
      .selectAll()
      .where((eb) => eb.or([eb('declared', '=', true), eb('reported_at', '>', this.reportCutoff())]))
      .orderBy('page')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      page: row.page,
      label: row.label,
      declared: row.declared,
      reportedAt: row.reported_at,
    }));
  }

  /**
   * Deletes slot reports past the TTL (placements in them stay, and show again if the slot comes
   * back), and slot build records older than `buildMaxAgeMs` (a process that crashed mid-build
   * never ended them; they already count as gone). Answers how many slot reports went.
   */
  async sweepSlots(buildMaxAgeMs = slotBuildMaxAgeMs(600_000)): Promise<number> {
    const gone = await this.db
      .deleteFrom('wire_slots')
      .where('declared', '=', false)
      .where('reported_at', '<=', this.reportCutoff())
      .executeTakeFirst();
    await this.db
      .deleteFrom('wire_slot_builds')
      .where('started_at', '<=', new Date(Date.now() - buildMaxAgeMs))
      .execute();
    return Number(gone.numDeletedRows);
  }

  /** Appends a wish to the owner's app's trail; answers its number, or null for no such app. */
  async appendWish(owner: string, appId: string, wish: string): Promise<number | null> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await lockOwned(trx, owner, appId))) return null;
      const [seq] = await appendTrail(trx, appId, [wish], this.date());
      return seq ?? null;
    });
  }

  /** The owner's app's wishes in order; null for no such app. */
  async trail(owner: string, appId: string): Promise<Wish[] | null> {
    const app = await owned(this.db, owner, appId);
    if (!app) return null;
    const rows = await this.db
      .selectFrom('wire_app_trail')
      .selectAll()
      .where('app_id', '=', appId)
      .orderBy('seq')
      .execute();
    return rows.map((row) => ({ seq: row.seq, wish: row.wish, createdAt: row.created_at }));
  }

  /** Replaces the owner's app's whole trail, atomically; false for no such app. */
  async rewriteTrail(owner: string, appId: string, wishes: readonly string[]): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await lockOwned(trx, owner, appId))) return false;
      await replaceTrail(trx, appId, wishes, this.date());
      return true;
    });
  }

  /**
   * Rebases the owner's remix onto a new baseline: one new version (the replayed document), the
   * new baseline hash and the replayed trail, all in one transaction. Refused (`moved`) when the
   * app gained a version since `fromVersion`, the version the replay started from: that edit is
   * not in the replay. A replay that failed never calls this, so it writes nothing.
   */
  async rebase(
    owner: string,
    appId: string,
    input: {
      fromVersion: number;
      baselineHash: string;
      document: AppDocument;
      contentHash: string;
      wishes: readonly string[];
    },
  ): Promise<RebaseOutcome> {
    return this.db.transaction().execute(async (trx): Promise<RebaseOutcome> => {
      const app = await lockOwned(trx, owner, appId);
      if (!app || app.kind === 'app') return { ok: false, reason: 'not_found' };
      if (app.version !== input.fromVersion) return { ok: false, reason: 'moved' };
      const row = await this.insertNextVersion(trx, app, input, input.baselineHash);
      await replaceTrail(trx, appId, input.wishes, this.date());
      return { ok: true, version: row.version };
    });
  }

  /**
   * Moves everything an anonymous visitor made to the user they signed in as, in one transaction:
   * their apps (with versions and trails, which follow the app) and their placements. Where the
   * two clash the user's is kept: a visitor's remix of a component the user already remixed is
   * deleted (with its versions, trail and placements), and a visitor's placement in a slot the
   * user already filled is dropped.
   */
  async adoptApps(visitor: string, user: string): Promise<AppAdoption> {
    return this.db.transaction().execute(async (trx) => {
      const apps = await trx
        .selectFrom('wire_apps')
        .select(['id', 'kind', 'baseline_key'])
        .where('owner', '=', visitor)
        .forUpdate()
        .execute();
      if (apps.length === 0) return { apps: 0, placements: 0, dropped: { apps: [], slots: [] } };
      const remixKeys = apps.filter((app) => app.kind !== 'app').map((app) => app.baseline_key!);
      const taken =
        remixKeys.length === 0
          ? new Set<string>()
          : new Set(
              (
                await trx
                  .selectFrom('wire_apps')
                  .select('baseline_key')
                  .where('owner', '=', user)
                  .where('kind', '<>', 'app')
                  .where('baseline_key', 'in', remixKeys)
                  .execute()
              ).map((row) => row.baseline_key!),
            );
      const droppedApps = apps
        .filter((app) => app.kind !== 'app' && taken.has(app.baseline_key!))
        .map((app) => app.id);
      if (droppedApps.length > 0) await trx.deleteFrom('wire_apps').where('id', 'in', droppedApps).execute();
      const moved = await trx
        .updateTable('wire_apps')
        .set({ owner: user })
        .where('owner', '=', visitor)
        .executeTakeFirst();
      const droppedSlots = await trx
        .deleteFrom('wire_placements')
        .where('owner', '=', visitor)
        .where('slot_id', 'in', (eb) =>
          eb.selectFrom('wire_placements').select('slot_id').where('owner', '=', user),
        )
        .returning('slot_id')
        .execute();
      const placed = await trx
        .updateTable('wire_placements')
        .set({ owner: user })
        .where('owner', '=', visitor)
        .executeTakeFirst();
      return {
        apps: Number(moved.numUpdatedRows),
        placements: Number(placed.numUpdatedRows),
        dropped: { apps: droppedApps.sort(), slots: droppedSlots.map((row) => row.slot_id).sort() },
      };
    });
  }

  /** Review apps whose current version waits for a reviewer, oldest first, across owners. */
  async reviewQueue(limit = 100): Promise<ReviewItem[]> {
    const rows = await this.db
      .selectFrom('wire_app_versions as v')
      .innerJoin('wire_apps as a', (join) =>
        join.onRef('a.id', '=', 'v.app_id').onRef('a.version', '=', 'v.version'),
      )
      .select(['a.id', 'a.owner', 'a.name', 'a.baseline_key', 'v.version', 'v.content_hash', 'v.created_at'])
      .where('a.kind', '=', 'review')
      .where('v.review_status', '=', 'pending')
      .orderBy('v.created_at')
      .orderBy('a.id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      appId: row.id,
      owner: row.owner,
      name: row.name,
      baselineKey: row.baseline_key,
      version: row.version,
      contentHash: row.content_hash,
      createdAt: row.created_at,
    }));
  }

  /**
   * One review app's current version as the queue lists it, with its document (what the reviewer
   * decides on); null when the app is not a review app or its current version does not wait.
   */
  async reviewItem(appId: string): Promise<(ReviewItem & { document: AppDocument }) | null> {
    const row = await this.db
      .selectFrom('wire_app_versions as v')
      .innerJoin('wire_apps as a', (join) =>
        join.onRef('a.id', '=', 'v.app_id').onRef('a.version', '=', 'v.version'),
      )
      .select([
        'a.id',
        'a.owner',
        'a.name',
        'a.baseline_key',
        'v.version',
        'v.content_hash',
        'v.created_at',
        'v.document',
      ])
      .where('a.id', '=', appId)
      .where('a.kind', '=', 'review')
      .where('v.review_status', '=', 'pending')
      .executeTakeFirst();
    if (!row) return null;
    return {
      appId: row.id,
      owner: row.owner,
      name: row.name,
      baselineKey: row.baseline_key,
      version: row.version,
      contentHash: row.content_hash,
      createdAt: row.created_at,
      document: row.document,
    };
  }

  /**
   * Approves the review app's current version, if its content hash is exactly `contentHash` (the
   * version the reviewer saw): from then on that version serves.
   */
  async approve(appId: string, contentHash: string, reviewer: string): Promise<ReviewOutcome> {
    return this.decide(appId, contentHash, reviewer, 'approved', null);
  }

  /** Rejects the review app's current version (exactly `contentHash`); a note saying why is required. */
  async reject(appId: string, contentHash: string, note: string, reviewer: string): Promise<ReviewOutcome> {
    if (note.trim() === '') return { ok: false, reason: 'note_required' };
    return this.decide(appId, contentHash, reviewer, 'rejected', note);
  }

  private async decide(
    appId: string,
    contentHash: string,
    reviewer: string,
    status: 'approved' | 'rejected',
    note: string | null,
  ): Promise<ReviewOutcome> {
    return this.db.transaction().execute(async (trx): Promise<ReviewOutcome> => {
      const app = await trx
        .selectFrom('wire_apps')
        .selectAll()
        .where('id', '=', appId)
        .where('kind', '=', 'review')
        .forNoKeyUpdate()
        .executeTakeFirst();
      if (!app) return { ok: false, reason: 'not_found' };
      const current = await currentVersion(trx, app);
      if (current.content_hash !== contentHash) return { ok: false, reason: 'stale' };
      if (current.review_status !== 'pending') return { ok: false, reason: 'not_pending' };
      await trx
        .updateTable('wire_app_versions')
        .set({ review_status: status, review_note: note, reviewed_by: reviewer, reviewed_at: this.date() })
        .where('app_id', '=', appId)
        .where('version', '=', app.version)
        .execute();
      if (status === 'approved') {
        await trx
          .updateTable('wire_apps')
          .set({ approved_hash: contentHash, approved_version: app.version, updated_at: this.date() })
          .where('id', '=', appId)
          .execute();
      }
      return { ok: true, version: app.version };
    });
  }

  private async insertFirstVersion(
    trx: Transaction<Database>,
    app: AppRow,
    input: NewVersion,
  ): Promise<VersionRow> {
    const row = await this.insertVersionRow(trx, app, 1, input);
    if (input.wish !== undefined) await appendTrail(trx, app.id, [input.wish], this.date());
    return row;
  }

  /** The next version of a locked app, the app moved to it (and to a new baseline), history trimmed. */
  private async insertNextVersion(
    trx: Transaction<Database>,
    app: AppRow,
    input: NewVersion,
    baselineHash?: string,
  ): Promise<VersionRow> {
    const version = app.version + 1;
    const row = await this.insertVersionRow(trx, app, version, input);
    await trx
      .updateTable('wire_apps')
      .set({ version, updated_at: this.date(), ...(baselineHash ? { baseline_hash: baselineHash } : {}) })
      .where('id', '=', app.id)
      .execute();
    let trim = trx
      .deleteFrom('wire_app_versions')
      .where('app_id', '=', app.id)
      .where('version', '<=', version - APP_HISTORY_LIMIT);
    if (app.approved_version !== null) trim = trim.where('version', '<>', app.approved_version);
    await trim.execute();
    return row;
  }

  private insertVersionRow(trx: Transaction<Database>, app: AppRow, version: number, input: NewVersion) {
    return trx
      .insertInto('wire_app_versions')
      .values({
        app_id: app.id,
        version,
        document: JSON.stringify(input.document),
        content_hash: input.contentHash,
        review_status: app.kind === 'review' ? 'pending' : null,
        created_at: this.date(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  private date(): Date {
    return new Date(this.now());
  }

  private reportCutoff(): Date {
    return new Date(this.now() - SLOT_REPORT_TTL_MS);
  }
}

function owned(db: Db, owner: string, id: string): Promise<AppRow | undefined> {
  return db
    .selectFrom('wire_apps')
    .selectAll()
    .where('owner', '=', owner)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * The owner's app, locked until the transaction ends, so its version number and trail move one
 * writer at a time. `delete` takes the full lock, so a placement racing the delete waits for it;
 * an edit takes the lighter one, which placements of the app do not wait for.
 */
function lockOwned(
  trx: Transaction<Database>,
  owner: string,
  id: string,
  lock: 'edit' | 'delete' = 'edit',
): Promise<AppRow | undefined> {
  const query = trx.selectFrom('wire_apps').selectAll().where('owner', '=', owner).where('id', '=', id);
  return (lock === 'delete' ? query.forUpdate() : query.forNoKeyUpdate()).executeTakeFirst();
}

function currentVersion(db: Db, app: AppRow): Promise<VersionRow> {
  return db
    .selectFrom('wire_app_versions')
    .selectAll()
    .where('app_id', '=', app.id)
    .where('version', '=', app.version)
    .executeTakeFirstOrThrow();
}

/** Appends wishes after the trail's last; the caller holds the app's lock. */
async function appendTrail(trx: Transaction<Database>, appId: string, wishes: readonly string[], at: Date) {
  if (wishes.length === 0) return [];
  const last = await trx
    .selectFrom('wire_app_trail')
    .select((eb) => eb.fn.coalesce(eb.fn.max('seq'), eb.lit(0)).as('seq'))
    .where('app_id', '=', appId)
    .executeTakeFirstOrThrow();
  const rows = wishes.map((wish, i) => ({
    app_id: appId,
    seq: Number(last.seq) + i + 1,
    wish,
    created_at: at,
  }));
  await trx.insertInto('wire_app_trail').values(rows).execute();
  // The trail keeps the newest wishes only, trimmed in the same transaction as the append.
  const newest = rows.at(-1)!.seq;
  await trx
    .deleteFrom('wire_app_trail')
    .where('app_id', '=', appId)
    .where('seq', '<=', newest - APP_TRAIL_LIMIT)
    .execute();
  return rows.map((row) => row.seq);
}

async function replaceTrail(trx: Transaction<Database>, appId: string, wishes: readonly string[], at: Date) {
  await trx.deleteFrom('wire_app_trail').where('app_id', '=', appId).execute();
  await appendTrail(trx, appId, wishes, at);
}

function lastById<T extends { id: string }>(slots: readonly T[]): T[] {
  return [...new Map(slots.map((slot) => [slot.id, slot])).values()];
}

function recordOf(row: AppRow): AppRecord {
  return {
    id: row.id,
    owner: row.owner,
    name: row.name,
    kind: row.kind,
    baselineKey: row.baseline_key,
    baselineHash: row.baseline_hash,
    forkedFrom: row.forked_from,
    version: row.version,
    servedVersion: row.kind === 'review' ? row.approved_version : row.version,
    approvedHash: row.approved_hash,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function versionOf(row: VersionRow): AppVersion {
  return {
    version: row.version,
    contentHash: row.content_hash,
    review: row.review_status
      ? {
          status: row.review_status,
          note: row.review_note,
          reviewedBy: row.reviewed_by,
          reviewedAt: row.reviewed_at,
        }
      : null,
    createdAt: row.created_at,
  };
}

function withDocument(app: AppRow, version: VersionRow): AppWithDocument {
  return { ...recordOf(app), current: { ...versionOf(version), document: version.document } };
}
