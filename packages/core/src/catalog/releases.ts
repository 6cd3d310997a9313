import type { Kysely } from 'kysely';
import {
  checkManifest,
  formatPath,
  type Manifest,
  type ManifestProblem,
  manifestSchema,
  wizardLayoutOf,
} from '../schemas/manifest.js';
import { notifyCatalogChanged } from '../store/catalog-changes.js';
import type { Database, ReleaseArtifact } from '../store/database.js';

/** A release version: what the developer names it (`1.2.0`, `2026-11-23`). */
export const RELEASE_VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

export interface PublishedRelease {
  id: string;
  toolId: string;
  version: string;
}

export type PublishResult =
  | { ok: true; release: PublishedRelease }
  | { ok: false; reason: 'invalid_manifest'; problems: ManifestProblem[] }
  | { ok: false; reason: 'tool_not_found' | 'duplicate_version' };

export interface PublishReleaseInput {
  toolSlug: string;
  version: string;
  /** The manifest: `service.yaml` text (checked as `service validate` checks it) or its parsed object. */
  manifest: string | Record<string, unknown>;
  publishedBy?: string | null;
  /** What a deployer runs (a directory and its start command); without one the release is not deployable. */
  artifact?: ReleaseArtifact | null;
}

/**
 * Publishes a release of a tool from its manifest: the manifest is checked with the developer
 * CLI's validator, its integrations must be in the catalog, and the release becomes the tool's
 * active one while the previous active one is superseded, in one transaction (the tool row is
 * locked, so concurrent publishes of one tool leave exactly one active). Every instance drops its
 * tool caches when it commits.
 */
export async function publishRelease(
  db: Kysely<Database>,
  input: PublishReleaseInput,
): Promise<PublishResult> {
  const checked = checkManifestInput(input.manifest);
  if (!checked.ok) return { ok: false, reason: 'invalid_manifest', problems: checked.problems };
  const manifest = checked.manifest;
  const required = manifest.integrations ?? [];
  const optional = manifest.optional_integrations ?? [];

  const known = new Set(
    required.length + optional.length === 0
      ? []
      : (
          await db
            .selectFrom('integrations')
            .select('provider')
            .where('provider', 'in', [...required, ...optional])
            .execute()
        ).map((row) => row.provider),
  );
  const unknown: ManifestProblem[] = [
    ...required.map((slug, index) => ({ slug, path: formatPath(['integrations', index]) })),
    ...optional.map((slug, index) => ({ slug, path: formatPath(['optional_integrations', index]) })),
  ]
    .filter(({ slug }) => !known.has(slug))
    .map(({ slug, path }) => ({ path, message: `${slug} is not an integration of the catalog` }));
  if (unknown.length > 0) return { ok: false, reason: 'invalid_manifest', problems: unknown };

  return db.transaction().execute(async (trx) => {
    const tool = await trx
      .selectFrom('tools')
      .select('id')
      .where('slug', '=', input.toolSlug)
      .forUpdate()
      .executeTakeFirst();
    if (!tool) return { ok: false, reason: 'tool_not_found' } as const;
    const existing = await trx
      .selectFrom('tool_releases')
      .select('id')
      .where('tool_id', '=', tool.id)
      .where('version', '=', input.version)
      .executeTakeFirst();
    if (existing) return { ok: false, reason: 'duplicate_version' } as const;
    await trx
      .updateTable('tool_releases')
      .set({ status: 'superseded' })
      .where('tool_id', '=', tool.id)
      .where('status', '=', 'active')
      .execute();
    const layout = wizardLayoutOf(manifest);
    const release = await trx
      .insertInto('tool_releases')
      .values({
        tool_id: tool.id,
        version: input.version,
        manifest: JSON.stringify(manifest),
        wizard_inputs: JSON.stringify(manifest.wizard?.inputs ?? []),
        wizard_layout: layout === null ? null : JSON.stringify(layout),
        required_integrations: JSON.stringify(required),
        optional_integrations: JSON.stringify(optional),
        status: 'active',
        published_by: input.publishedBy ?? null,
        artifact: input.artifact ? JSON.stringify(input.artifact) : null,
      })
      .returning(['id', 'tool_id', 'version'])
      .executeTakeFirstOrThrow();
    await notifyCatalogChanged(trx, 'tools');
    return {
      ok: true,
      release: { id: release.id, toolId: release.tool_id, version: release.version },
    } as const;
  });
}

/**
 * Whether this platform can run a release: it names an artifact for the deployer. A release
 * published without one (a listing only) is active yet not deployable, so the deploy refuses it
 * and the deployable list leaves it out, by this one rule.
 */
export function releaseIsRunnable(release: { artifact: ReleaseArtifact | null }): boolean {
  return release.artifact !== null;
}

/**
 * Withdraws a release: it no longer counts as the tool's active one (a tool without an active
 * release leaves the deployable list). False when the tool has no such release.
 */
export async function withdrawRelease(
  db: Kysely<Database>,
  toolSlug: string,
  version: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('tool_releases')
      .set({ status: 'withdrawn' })
      .where('version', '=', version)
      .where('tool_id', '=', (eb) => eb.selectFrom('tools').select('id').where('slug', '=', toolSlug))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return false;
    await notifyCatalogChanged(trx, 'tools');
    return true;
  });
}

function checkManifestInput(
  manifest: string | Record<string, unknown>,
): { ok: true; manifest: Manifest } | { ok: false; problems: ManifestProblem[] } {
  if (typeof manifest === 'string') return checkManifest(manifest);
  const parsed = manifestSchema.safeParse(manifest);
  if (parsed.success) return { ok: true, manifest: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map((issue) => ({
      path: formatPath(issue.path as Array<string | number>),
      message: issue.message,
    })),
  };
}
