import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { notifyCatalogChanged, publishRelease } from '@service/core/catalog';
import type { Platform } from '@service/core/platform';

/** The example tool's own manifest: `service validate` checks it, and its release is published from it. */
const DEPLOYED_TOOL_MANIFEST = fileURLToPath(new URL('../../deployed-tool/service.yaml', import.meta.url));

const DEMO_RELEASE_VERSION = '1.0.0';
/**
 * The example tool's release: raised when its manifest changes, since a store seeded by an older
 * version keeps the release it has and makes a new one active only under a new version.
 */
const DEPLOYED_TOOL_VERSION = '1.0.1';

const RESEARCH_DESK_MANIFEST = `name: research-desk
version: 1
runtime: node
title: Research desk
description: Answers questions with sources, read aloud on request.
category: research
integrations: [llm-gateway, web-search]
optional_integrations: [speech]
wizard:
  inputs:
    - { key: DESK_NAME, label: Desk name, type: text, required: true }
    - { key: MAX_SOURCES, label: Sources per answer, type: number }
    - { key: SEARCH_REGION, label: Search region, type: text }
  steps:
    - id: connect
      title: Connect your services
      sections:
        - { type: integration, providers: [llm-gateway, web-search] }
    - id: voice
      title: Read answers aloud (optional)
      sections:
        - { type: integration, providers: [speech] }
    - id: configure
      title: Configure the desk
      sections:
        - { type: inputs, keys: [DESK_NAME, MAX_SOURCES, SEARCH_REGION] }
`;

const manifestOf = (name: string, integrations: string) =>
  `name: ${name}\nversion: 1\nruntime: node\nintegrations: [${integrations}]\n`;

/**
 * The demo catalog's tools: the example deployed tool (the demo app runs it), a research desk with
 * a three-step deploy wizard, a voice-notes tool, an internal one and a test one (hidden from
 * everyone but platform admins). Each with a release published from its manifest; only the
 * example tool's names something to run (`demo-deploy.ts`), so it alone is offered to deploy and
 * the others are listed in the catalog.
 */
const DEMO_TOOLS = [
  {
    slug: 'deployed-tool',
    name: 'Balance watcher',
    description: "Shows the workspace's credit and connections, live from the event stream.",
    category: 'operations',
    source_repo: 'examples/deployed-tool',
    internal: false,
    version: DEPLOYED_TOOL_VERSION,
    manifest: () => readFileSync(DEPLOYED_TOOL_MANIFEST, 'utf8'),
  },
  {
    slug: 'research-desk',
    name: 'Research desk',
    description: 'Answers questions with sources, read aloud on request.',
    category: 'research',
    source_repo: '',
    internal: false,
    manifest: () => RESEARCH_DESK_MANIFEST,
  },
  {
    slug: 'voice-notes',
    name: 'Voice notes',
    description: 'Transcribes voice memos and reads summaries back.',
    category: 'audio',
    source_repo: '',
    internal: false,
    manifest: () => manifestOf('voice-notes', 'transcription, speech'),
  },
  {
    slug: 'launch-planner',
    name: 'Launch planner',
    description: 'Not launched yet: platform admins see it.',
    category: 'operations',
    source_repo: '',
    internal: true,
    manifest: () => manifestOf('launch-planner', 'llm-gateway'),
  },
  {
    slug: 'service-test-echo',
    name: 'Echo (test)',
    description: 'Answers what it is sent; for the platform’s own checks.',
    category: 'testing',
    source_repo: '',
    internal: false,
    manifest: () => manifestOf('echo', 'llm-gateway'),
  },
] as const;

/**
 * Upserts the demo tools at every boot (an older store gets the new rows; an admin's switch of
 * `enabled` stays) and publishes each one's release unless it has it; the demo app runs the
 * example tool's release, so usage framing of that tool comes from the demo's own spend.
 */
export async function seedDemoTools(platform: Platform, demoAppId: string | null): Promise<void> {
  const { db } = platform.store;
  for (const tool of DEMO_TOOLS) {
    const { manifest, version, ...row } = { version: DEMO_RELEASE_VERSION, ...tool };
    await db
      .insertInto('tools')
      .values(row)
      .onConflict((oc) =>
        oc.column('slug').doUpdateSet({
          name: row.name,
          description: row.description,
          category: row.category,
          source_repo: row.source_repo,
          internal: row.internal,
        }),
      )
      .execute();
    const published = await publishRelease(db, {
      toolSlug: tool.slug,
      version,
      manifest: manifest(),
    });
    if (!published.ok && published.reason !== 'duplicate_version') {
      const problems = published.reason === 'invalid_manifest' ? JSON.stringify(published.problems) : '';
      throw new Error(`The demo tool ${tool.slug} cannot be published: ${published.reason} ${problems}`);
    }
  }
  await notifyCatalogChanged(db, 'tools');
  if (!demoAppId) return;
  const release = await db
    .selectFrom('tool_releases as r')
    .innerJoin('tools as t', 't.id', 'r.tool_id')
    .select(['t.id as tool_id', 'r.id as release_id'])
    .where('t.slug', '=', 'deployed-tool')
    .where('r.version', '=', DEPLOYED_TOOL_VERSION)
    .executeTakeFirstOrThrow();
  await db.updateTable('apps').set(release).where('id', '=', demoAppId).execute();
}
