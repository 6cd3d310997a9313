import { notifyCatalogChanged } from '@service/core/catalog';
import type { Platform } from '@service/core/platform';
import { upsertProvider } from '@service/core/proxy';
import { DEMO_UPSTREAM_ORIGIN } from './demo-upstream.js';

/**
 * The demo's integrations: an LLM gateway, web search, speech synthesis, transcription and an
 * OAuth calendar connector. Upserted at every boot, so a store seeded by an older version gets
 * the new rows and fields; an integration an admin disabled stays disabled. Logos and docs pages
 * are left to the platform (an empty `logo_url` / `docs_url` reads as the platform's own
 * generated logo and docs page), so they follow each instance's base URL.
 */
type Kind = 'service' | 'llm_gateway' | 'speech_synthesis' | 'transcription' | 'connector';

interface DemoIntegration {
  provider: string;
  name: string;
  kind: Kind;
  category: string;
  description: string;
  iconName: string | null;
  profiles: string[];
  /** Prefix of the environment variables a bound tool gets; null: none (an OAuth connector). */
  envPrefix: string | null;
}

const MANAGED_AND_OWN_KEY = ['vendo_managed_pool', 'byok_static'];

export const DEMO_INTEGRATIONS: DemoIntegration[] = [
  {
    provider: 'llm-gateway',
    name: 'LLM Gateway',
    kind: 'llm_gateway',
    category: 'ai',
    description: 'Chat and completion models from many vendors through one endpoint.',
    iconName: 'sparkles',
    profiles: MANAGED_AND_OWN_KEY,
    envPrefix: 'LLM_GATEWAY',
  },
  {
    provider: 'web-search',
    name: 'Web search',
    kind: 'service',
    category: 'search',
    description: 'Search the web and fetch pages.',
    iconName: 'search',
    profiles: MANAGED_AND_OWN_KEY,
    envPrefix: 'WEB_SEARCH',
  },
  {
    provider: 'speech',
    name: 'Speech synthesis',
    kind: 'speech_synthesis',
    category: 'audio',
    description: 'Text to natural speech in many voices.',
    iconName: 'volume',
    profiles: MANAGED_AND_OWN_KEY,
    envPrefix: 'SPEECH',
  },
  {
    provider: 'transcription',
    name: 'Transcription',
    kind: 'transcription',
    category: 'audio',
    description: 'Speech to text, with timestamps.',
    iconName: 'mic',
    profiles: MANAGED_AND_OWN_KEY,
    envPrefix: 'TRANSCRIPTION',
  },
  {
    provider: 'calendar',
    name: 'Calendar',
    kind: 'connector',
    category: 'productivity',
    description: "Read and schedule events on the user's own calendar (they connect it by OAuth).",
    iconName: 'calendar',
    profiles: ['oauth_user'],
    envPrefix: null,
  },
];

/** Upserts the demo integrations and the managed pools of speech and transcription. */
export async function ensureDemoIntegrations(platform: Platform): Promise<void> {
  const { db } = platform.store;
  for (const row of DEMO_INTEGRATIONS) {
    const fields = {
      name: row.name,
      kind: row.kind,
      category: row.category,
      description: row.description,
      icon_name: row.iconName,
      default_profile: row.profiles[0]!,
      supported_profiles: JSON.stringify(row.profiles),
      logo_url: '',
      docs_url: '',
      env_bootstrap: JSON.stringify({
        vars: row.envPrefix
          ? [
              { name: `${row.envPrefix}_API_KEY`, value_from: 'app_key' },
              { name: `${row.envPrefix}_BASE_URL`, value_from: 'proxy_url' },
            ]
          : [],
        restart: 'on_change',
      }),
    };
    await db
      .insertInto('integrations')
      .values({ provider: row.provider, ...fields })
      .onConflict((oc) => oc.column('provider').doUpdateSet(fields))
      .execute();
  }
  // Speech and transcription are priced per call (USD 0.01 and 0.006 before the margin), served
  // offline by the demo upstream like the others.
  const { sealer } = platform.context;
  for (const [slug, micros] of [
    ['speech', '10000'],
    ['transcription', '6000'],
  ] as const) {
    await upsertProvider(db, sealer, {
      slug,
      upstreamUrl: `${DEMO_UPSTREAM_ORIGIN}/${slug}`,
      dialect: 'per_call',
      rates: [{ meter: 'call', unitPriceMicros: micros, public: true }],
    });
  }
  // Instances already running drop their cached catalog and prices.
  await notifyCatalogChanged(db, 'integrations');
  await notifyCatalogChanged(db, 'pricing');
}
