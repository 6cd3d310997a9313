import { fileURLToPath } from 'node:url';
import type { Platform } from '@service/core/platform';

/** The catalog tool `pnpm start` offers to deploy: `examples/deployed-tool`. */
export const DEMO_TOOL_SLUG = 'deployed-tool';

/** `examples/deployed-tool` and its start command, as the local deployer runs it. */
const DEMO_TOOL_ARTIFACT = {
  type: 'directory' as const,
  path: fileURLToPath(new URL('../../deployed-tool', import.meta.url)),
  start: ['node', '--import', 'tsx', 'src/main.ts'],
};

/**
 * Makes the example tool deployable from the catalog: the tool and an active release when there
 * is none, and the release's artifact pointed at this checkout's `examples/deployed-tool` (the
 * path moves with the checkout). Idempotent.
 */
export async function seedDeployableDemoTool(platform: Platform): Promise<void> {
  const { db } = platform.store;
  await db
    .insertInto('tools')
    .values({
      slug: DEMO_TOOL_SLUG,
      name: 'Deployed tool example',
      description: 'Shows its credit and connections, and the identity the app proxy sends it.',
    })
    .onConflict((oc) => oc.column('slug').doNothing())
    .execute();
  const tool = await db
    .selectFrom('tools')
    .select('id')
    .where('slug', '=', DEMO_TOOL_SLUG)
    .executeTakeFirstOrThrow();
  const active = await db
    .selectFrom('tool_releases')
    .select('id')
    .where('tool_id', '=', tool.id)
    .where('status', '=', 'active')
    .executeTakeFirst();
  const artifact = JSON.stringify(DEMO_TOOL_ARTIFACT);
  if (active) {
    await db.updateTable('tool_releases').set({ artifact }).where('id', '=', active.id).execute();
    return;
  }
  await db
    .insertInto('tool_releases')
    .values({
      tool_id: tool.id,
      version: '0.1.0',
      manifest: JSON.stringify({ name: DEMO_TOOL_SLUG }),
      artifact,
    })
    .onConflict((oc) => oc.columns(['tool_id', 'version']).doNothing())
    .execute();
}
