import type { Kysely } from 'kysely';
import { TtlCache } from '../internal/ttl-cache.js';
import { readWizardLayout, type WizardLayout } from '../schemas/manifest.js';
import { followCatalogChanges, notifyCatalogChanged } from '../store/catalog-changes.js';
import type { Database } from '../store/database.js';
import type { NotificationHandler } from '../store/listener.js';
import type { WizardInputRow } from '../store/tables/catalog.js';
import { integrationLogoOf, toolIconUrl } from './icons.js';
import {
  type PublishReleaseInput,
  type PublishResult,
  publishRelease,
  releaseIsRunnable,
  withdrawRelease,
} from './releases.js';
import { tenantIntegrationStates } from './tenant-integrations.js';
import { type UsageFramingEntry, usageFramingOf } from './usage-framing.js';

const HOUR_MS = 60 * 60 * 1000;
/** Lifetimes of the caches in front of the store; every write to the catalog drops them sooner. */
export const TOOL_CATALOG_CACHE_MS = HOUR_MS;
export const DEPLOYABLE_CACHE_MS = 5 * 60 * 1000;
export const USAGE_FRAMING_CACHE_MS = HOUR_MS;
/** Slugs of test tools, hidden from everyone but platform admins unless configured otherwise. */
export const DEFAULT_HIDDEN_TOOL_PREFIX = 'service-test-';
/** The contract's own prefix of test tools, hidden whatever prefix is configured beside it. */
export const CONTRACT_HIDDEN_TOOL_PREFIX = 'vendo-test-';

/** A catalog tool as the catalog list and the detail show it. */
export interface CatalogTool {
  slug: string;
  name: string;
  description: string;
  category: string;
}

/** A tool with an active release, as the deploy wizard reads it. */
export interface DeployableTool {
  toolSlug: string;
  toolName: string;
  description: string;
  iconUrl: string;
  authMode: string;
  sourceRepo: string;
  version: string;
  wizardInputs: WizardInputRow[];
  wizardLayout: WizardLayout | null;
}

/** The full tool row with its active release joined (`release` null without one). */
export interface ToolDetail extends CatalogTool {
  id: string;
  iconUrl: string;
  authMode: string;
  sourceRepo: string;
  enabled: boolean;
  internal: boolean;
  surfaceAllConnections: boolean;
  createdAt: string;
  updatedAt: string;
  release: {
    id: string;
    version: string;
    status: 'active';
    publishedAt: string;
    requiredIntegrations: string[];
    optionalIntegrations: string[];
    wizardInputs: WizardInputRow[];
    wizardLayout: WizardLayout | null;
  } | null;
}

/** One integration a tool asks for, with whether the caller already has it on. */
export interface IntegrationRequirement {
  integrationId: string;
  provider: string;
  name: string;
  description: string;
  iconName: string | null;
  logoUrl: string;
  category: string;
  defaultProfile: string;
  supportedProfiles: string[];
  alreadyEnabled: boolean;
}

/** Who asks: platform admins see every tool; `tenantId` is the signed-in caller's workspace. */
export interface CatalogViewer {
  admin: boolean;
  tenantId?: string | null;
}

export interface ToolCatalogOptions {
  baseUrl: string;
  now?: () => number;
  hiddenPrefix?: string;
}

/** The editable columns of a catalog tool. */
export interface ToolChanges {
  name?: string;
  description?: string;
  category?: string;
  iconUrl?: string | null;
  authMode?: string;
  sourceRepo?: string;
  enabled?: boolean;
  internal?: boolean;
  surfaceAllConnections?: boolean;
}

/**
 * The platform's catalog of deployable tools: the public lists (cached, dropped on every instance
 * as a change to tools commits), the detail of one tool, its usage framing and the integrations
 * it asks for; and the platform admins' edits.
 *
 * @see docs/api/tools.md
 */
export class ToolCatalog {
  readonly #db: Kysely<Database>;
  readonly #baseUrl: string;
  readonly #hiddenPrefix: string;
  readonly #catalog: TtlCache<'public', CatalogTool[]>;
  readonly #deployable: TtlCache<'public', DeployableTool[]>;
  readonly #framing: TtlCache<string, UsageFramingEntry[] | null>;
  readonly #now: () => number;
  /**
   * Counts forgettings: a read that overlapped one may have read the store before the change it
   * announced, so it answers its caller but is not cached.
   */
  #generation = 0;

  constructor(db: Kysely<Database>, options: ToolCatalogOptions) {
    this.#db = db;
    this.#baseUrl = options.baseUrl;
    this.#hiddenPrefix = options.hiddenPrefix ?? DEFAULT_HIDDEN_TOOL_PREFIX;
    this.#now = options.now ?? Date.now;
    const now = this.#now;
    this.#catalog = new TtlCache({ ttlMs: TOOL_CATALOG_CACHE_MS, now });
    this.#deployable = new TtlCache({ ttlMs: DEPLOYABLE_CACHE_MS, now });
    this.#framing = new TtlCache({ ttlMs: USAGE_FRAMING_CACHE_MS, now, maxEntries: 10_000 });
  }

  /** Drops this instance's caches whenever any instance changes the tools. */
  follow(store: {
    listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  }): Promise<() => Promise<void>> {
    return followCatalogChanges(store, (part) => {
      if (part === 'tools') this.forget();
    });
  }

  forget(): void {
    this.#generation++;
    this.#catalog.clear();
    this.#deployable.clear();
    this.#framing.clear();
  }

  /** Enabled platform tools; admins every platform tool, read through. */
  async catalog(viewer: CatalogViewer): Promise<CatalogTool[]> {
    if (!viewer.admin) {
      const hit = this.#catalog.get('public');
      if (hit) return hit;
    }
    const generation = this.#generation;
    let query = this.#db
      .selectFrom('tools')
      .select(['slug', 'name', 'description', 'category'])
      .where('owner_tenant_id', 'is', null)
      .orderBy('name')
      .orderBy('slug');
    if (!viewer.admin) query = query.where('enabled', '=', true);
    const tools = await query.execute();
    if (!viewer.admin && generation === this.#generation) this.#catalog.set('public', tools);
    return tools;
  }

  /**
   * Platform tools with an active release this platform can run. Everyone else sees only enabled tools that are neither
   * internal nor named with the hidden prefix; admins see them all, read through.
   */
  async deployable(viewer: CatalogViewer): Promise<DeployableTool[]> {
    if (!viewer.admin) {
      const hit = this.#deployable.get('public');
      if (hit) return hit;
    }
    const generation = this.#generation;
    const rows = await this.#db
      .selectFrom('tools as t')
      .innerJoin('tool_releases as r', (join) =>
        join.onRef('r.tool_id', '=', 't.id').on('r.status', '=', 'active'),
      )
      .select([
        't.slug',
        't.name',
        't.description',
        't.icon_url',
        't.auth_mode',
        't.source_repo',
        't.enabled',
        't.internal',
        'r.version',
        'r.wizard_inputs',
        'r.wizard_layout',
        'r.artifact',
      ])
      .where('t.owner_tenant_id', 'is', null)
      .orderBy('t.name')
      .orderBy('t.slug')
      .execute();
    const tools = rows
      // A release the deploy would refuse as not runnable is no offer to deploy, for admins too.
      .filter(releaseIsRunnable)
      .filter(
        (row) =>
          viewer.admin ||
          (row.enabled &&
            !row.internal &&
            !row.slug.startsWith(this.#hiddenPrefix) &&
            !row.slug.startsWith(CONTRACT_HIDDEN_TOOL_PREFIX)),
      )
      .map((row) => ({
        toolSlug: row.slug,
        toolName: row.name,
        description: row.description,
        iconUrl: this.iconUrlOf(row.slug, row.icon_url),
        authMode: row.auth_mode,
        sourceRepo: row.source_repo,
        version: row.version,
        wizardInputs: wizardInputsOf(row.wizard_inputs),
        wizardLayout: readWizardLayout(row.wizard_layout),
      }));
    if (!viewer.admin && generation === this.#generation) this.#deployable.set('public', tools);
    return tools;
  }

  /** One platform tool with its active release; null when unknown, or disabled for non-admins. */
  async tool(slug: string, viewer: CatalogViewer): Promise<ToolDetail | null> {
    const row = await this.#db
      .selectFrom('tools as t')
      .leftJoin('tool_releases as r', (join) =>
        join.onRef('r.tool_id', '=', 't.id').on('r.status', '=', 'active'),
      )
      .selectAll('t')
      .select([
        'r.id as release_id',
        'r.version',
        'r.created_at as published_at',
        'r.required_integrations',
        'r.optional_integrations',
        'r.wizard_inputs',
        'r.wizard_layout',
      ])
      .where('t.slug', '=', slug)
      .where('t.owner_tenant_id', 'is', null)
      .executeTakeFirst();
    if (!row || (!row.enabled && !viewer.admin)) return null;
    return {
      id: row.id,
      slug: row.slug,
      name: row.name,
      description: row.description,
      category: row.category,
      iconUrl: this.iconUrlOf(row.slug, row.icon_url),
      authMode: row.auth_mode,
      sourceRepo: row.source_repo,
      enabled: row.enabled,
      internal: row.internal,
      surfaceAllConnections: row.surface_all_connections,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      release:
        row.release_id && row.version && row.published_at
          ? {
              id: row.release_id,
              version: row.version,
              status: 'active',
              publishedAt: new Date(row.published_at).toISOString(),
              requiredIntegrations: stringsOf(row.required_integrations),
              optionalIntegrations: stringsOf(row.optional_integrations),
              wizardInputs: wizardInputsOf(row.wizard_inputs),
              wizardLayout: readWizardLayout(row.wizard_layout),
            }
          : null,
    };
  }

  /** What USD 5, 25 and 100 buy of an enabled tool; null when there is no such tool. */
  async usageFraming(slug: string): Promise<UsageFramingEntry[] | null> {
    const hit = this.#framing.get(slug);
    if (hit !== undefined) return hit;
    const generation = this.#generation;
    const tool = await this.#db
      .selectFrom('tools')
      .select(['id', 'category'])
      .where('slug', '=', slug)
      .where('owner_tenant_id', 'is', null)
      .where('enabled', '=', true)
      .executeTakeFirst();
    const framing = tool ? await usageFramingOf(this.#db, tool, this.#now()) : null;
    if (generation === this.#generation) this.#framing.set(slug, framing);
    return framing;
  }

  /**
   * The integrations a tool's active release asks for, with `alreadyEnabled` from the app's bound
   * connections when `appId` is given (an app of another workspace counts as none), else from the
   * workspace's enabled integrations, else false. A tool that surfaces all connections lists every
   * enabled integration it does not require as optional. Unknown tools ask for nothing.
   */
  async integrationRequirements(
    slug: string,
    viewer: CatalogViewer & { appId?: string },
  ): Promise<{ required: IntegrationRequirement[]; optional: IntegrationRequirement[] }> {
    const tool = await this.tool(slug, viewer);
    if (!tool) return { required: [], optional: [] };
    const requiredSlugs = tool.release?.requiredIntegrations ?? [];
    let optionalSlugs = tool.release?.optionalIntegrations ?? [];
    const integrations = await this.#db
      .selectFrom('integrations')
      .select([
        'id',
        'provider',
        'name',
        'description',
        'icon_name',
        'logo_url',
        'category',
        'default_profile',
        'supported_profiles',
      ])
      .where('enabled', '=', true)
      .orderBy('name')
      .execute();
    if (tool.surfaceAllConnections) {
      optionalSlugs = integrations
        .map((row) => row.provider)
        .filter((provider) => !requiredSlugs.includes(provider));
    }
    const enabled = await this.#enabledProviders(viewer);
    const byProvider = new Map(integrations.map((row) => [row.provider, row]));
    const entries = (slugs: string[]) =>
      slugs.flatMap((provider) => {
        const row = byProvider.get(provider);
        if (!row) return [];
        return [
          {
            integrationId: row.id,
            provider: row.provider,
            name: row.name,
            description: row.description,
            iconName: row.icon_name,
            logoUrl: integrationLogoOf(this.#baseUrl, row),
            category: row.category,
            defaultProfile: row.default_profile,
            supportedProfiles: row.supported_profiles,
            alreadyEnabled: enabled.has(row.provider),
          },
        ];
      });
    return { required: entries(requiredSlugs), optional: entries(optionalSlugs) };
  }

  async #enabledProviders(viewer: CatalogViewer & { appId?: string }): Promise<Set<string>> {
    if (!viewer.tenantId) return new Set();
    if (viewer.appId) {
      const rows = await this.#db
        .selectFrom('app_connections as b')
        .innerJoin('connections as c', 'c.id', 'b.connection_id')
        .select('c.provider')
        .where('b.app_id', '=', viewer.appId)
        .where('b.tenant_id', '=', viewer.tenantId)
        .where('c.tenant_id', '=', viewer.tenantId)
        .execute();
      return new Set(rows.map((row) => row.provider));
    }
    const states = await tenantIntegrationStates(this.#db, viewer.tenantId);
    return new Set(
      [...states.values()].filter((state) => state.tenantEnabled).map((state) => state.provider),
    );
  }

  /** Every platform tool with its active release, for the admins' list. */
  async listForAdmin(): Promise<ToolDetail[]> {
    const slugs = await this.#db
      .selectFrom('tools')
      .select('slug')
      .where('owner_tenant_id', 'is', null)
      .orderBy('slug')
      .execute();
    const tools = await Promise.all(slugs.map(({ slug }) => this.tool(slug, { admin: true })));
    return tools.filter((tool): tool is ToolDetail => tool !== null);
  }

  /** Adds a platform tool; false when the slug is taken. */
  async create(slug: string, fields: ToolChanges & { name: string }): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('tools')
        .values({ slug, ...columnsOf(fields), name: fields.name })
        .onConflict((oc) => oc.column('slug').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (!inserted) return false;
      await notifyCatalogChanged(trx, 'tools');
      return true;
    });
  }

  /** Changes a platform tool; false when there is none of that slug. */
  async update(slug: string, changes: ToolChanges): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('tools')
        .set({ ...columnsOf(changes), updated_at: new Date() })
        .where('slug', '=', slug)
        .where('owner_tenant_id', 'is', null)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) return false;
      await notifyCatalogChanged(trx, 'tools');
      return true;
    });
  }

  /** Publishes a release of a platform tool (see `publishRelease`). */
  publish(input: PublishReleaseInput): Promise<PublishResult> {
    return publishRelease(this.#db, input);
  }

  /** Withdraws a release of a platform tool; false when it has none of that version. */
  withdraw(slug: string, version: string): Promise<boolean> {
    return withdrawRelease(this.#db, slug, version);
  }

  /** The stored icon, else the platform's generated one. */
  iconUrlOf(slug: string, iconUrl: string | null): string {
    return iconUrl ?? toolIconUrl(this.#baseUrl, slug);
  }
}

function columnsOf(changes: ToolChanges) {
  return {
    ...(changes.name !== undefined ? { name: changes.name } : {}),
    ...(changes.description !== undefined ? { description: changes.description } : {}),
    ...(changes.category !== undefined ? { category: changes.category } : {}),
    ...(changes.iconUrl !== undefined ? { icon_url: changes.iconUrl } : {}),
    ...(changes.authMode !== undefined ? { auth_mode: changes.authMode } : {}),
    ...(changes.sourceRepo !== undefined ? { source_repo: changes.sourceRepo } : {}),
    ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
    ...(changes.internal !== undefined ? { internal: changes.internal } : {}),
    ...(changes.surfaceAllConnections !== undefined
      ? { surface_all_connections: changes.surfaceAllConnections }
      : {}),
  };
}

/** Stored inputs as published; anything else in the column reads as none. */
function wizardInputsOf(stored: unknown): WizardInputRow[] {
  if (!Array.isArray(stored)) return [];
  return stored
    .filter(
      (input): input is WizardInputRow =>
        typeof input?.key === 'string' && typeof input?.label === 'string' && typeof input?.type === 'string',
    )
    .map(({ key, label, type, required }) => ({ key, label, type, required: required === true }));
}

function stringsOf(stored: unknown): string[] {
  return Array.isArray(stored) ? stored.filter((value): value is string => typeof value === 'string') : [];
}
