import { fileURLToPath } from 'node:url';
import { notifyCatalogChanged } from '@service/core/catalog';
import type { Platform } from '@service/core/platform';

/** The catalog tool `pnpm start` offers to deploy: `examples/deployed-tool` (seeded by `demo-tools.ts`). */
export const DEMO_TOOL_SLUG = 'deployed-tool';

/** `examples/deployed-tool` and its start command, as the local deployer runs it. */
const DEMO_TOOL_ARTIFACT = {
  type: 'directory' as const,
  path: fileURLToPath(new URL('../../deployed-tool', import.meta.url)),
  start: ['node', '--import', 'tsx', 'src/main.ts'],
};

/**
 * Makes the example tool deployable: points its active release's artifact at this checkout's
 * `examples/deployed-tool` (the path moves with the checkout, so it is written at each boot).
 */
export async function seedDeployableDemoTool(platform: Platform): Promise<void> {
  const { db } = platform.store;
  const active = await db
    .selectFrom('tool_releases')
    .innerJoin('tools', 'tools.id', 'tool_releases.tool_id')
    .select('tool_releases.id')
    .where('tools.slug', '=', DEMO_TOOL_SLUG)
    .where('tool_releases.status', '=', 'active')
    .executeTakeFirstOrThrow(() => new Error(`The demo seed published no release of ${DEMO_TOOL_SLUG}`));
  await db
    .updateTable('tool_releases')
    .set({ artifact: JSON.stringify(DEMO_TOOL_ARTIFACT) })
    .where('id', '=', active.id)
    .execute();
  // Only a release with an artifact is offered to deploy: every instance reads the list again.
  await notifyCatalogChanged(db, 'tools');
}
