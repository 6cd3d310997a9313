import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Platform } from '../../src/platform/create-platform.js';
import type { ReleaseArtifact, WizardInputRow } from '../../src/store/database.js';

const ROOT = join(import.meta.dirname, '../../../..');

/** `examples/deployed-tool` as a release artifact: its directory and its start command. */
export const DEPLOYED_TOOL_ARTIFACT: ReleaseArtifact = {
  type: 'directory',
  path: join(ROOT, 'examples/deployed-tool'),
  start: ['node', '--import', 'tsx', 'src/main.ts'],
};

/** The example tool runs on the SDK's built output: build it once when a checkout has none. */
export function ensureSdkBuilt(): void {
  if (existsSync(join(ROOT, 'packages/sdk/dist/index.js'))) return;
  execFileSync('pnpm', ['--filter', '@service/sdk', 'build'], { cwd: ROOT, stdio: 'ignore' });
}

export interface TestRelease {
  slug: string;
  version?: string;
  artifact?: ReleaseArtifact | null;
  wizardInputs?: WizardInputRow[];
  /** The wizard's steps (version 1), as publishing builds them from `wizard.steps`. */
  wizardLayout?: unknown;
  required?: string[];
  optional?: string[];
  /** The manifest's `restart_on`: event kinds that restart the deployment. */
  restartOn?: string[];
  /** A tenant's own tool; default a catalog tool. */
  ownerTenantId?: string;
}

/**
 * A catalog tool and its active release, written straight into the catalog tables (what
 * publishing a release does): the tool's id and the release's.
 */
export async function publishTestRelease(
  platform: Platform,
  release: TestRelease,
): Promise<{ toolId: string; releaseId: string }> {
  const { db } = platform.store;
  const existing = await db
    .selectFrom('tools')
    .select('id')
    .where('slug', '=', release.slug)
    .executeTakeFirst();
  const toolId =
    existing?.id ??
    (
      await db
        .insertInto('tools')
        .values({
          slug: release.slug,
          name: `Tool ${release.slug}`,
          owner_tenant_id: release.ownerTenantId ?? null,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  await db
    .updateTable('tool_releases')
    .set({ status: 'superseded' })
    .where('tool_id', '=', toolId)
    .where('status', '=', 'active')
    .execute();
  const row = await db
    .insertInto('tool_releases')
    .values({
      tool_id: toolId,
      version: release.version ?? '1.0.0',
      manifest: JSON.stringify({
        name: release.slug,
        ...(release.restartOn ? { restart_on: release.restartOn } : {}),
      }),
      wizard_inputs: JSON.stringify(release.wizardInputs ?? []),
      wizard_layout: release.wizardLayout === undefined ? null : JSON.stringify(release.wizardLayout),
      required_integrations: JSON.stringify(release.required ?? []),
      optional_integrations: JSON.stringify(release.optional ?? []),
      artifact: release.artifact === null ? null : JSON.stringify(release.artifact ?? DEPLOYED_TOOL_ARTIFACT),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { toolId, releaseId: row.id };
}
