import { type Kysely, sql } from 'kysely';
import type { Database } from './database.js';
import type { NotificationHandler } from './listener.js';

/**
 * The catalog's change notices. Here, below the catalog, because writers of other layers change
 * what the catalog caches too: the proxy's providers carry the margins and rates public pricing
 * shows.
 */

/** Channel on which a write to the catalog tells every instance to drop its catalog caches. */
export const CATALOG_CHANGED_CHANNEL = 'service_catalog_changed';

/** What changed: the caches that hold it are dropped. */
export type CatalogPart = 'integrations' | 'tools' | 'pricing';

/**
 * Tells every instance (this one too) that `part` changed. Given a transaction (a Kysely
 * `Transaction` is one), the notice is sent only if it commits.
 */
export async function notifyCatalogChanged(db: Kysely<Database>, part: CatalogPart): Promise<void> {
  await sql`select pg_notify(${CATALOG_CHANGED_CHANNEL}, ${part})`.execute(db);
}

/**
 * Calls `onChange` with each changed part; with every part when notices may have been missed
 * (the listener was away), so no cache outlives a change it did not hear of.
 */
export function followCatalogChanges(
  store: { listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> },
  onChange: (part: CatalogPart) => void,
): Promise<() => Promise<void>> {
  return store.listen(CATALOG_CHANGED_CHANNEL, (payload) => {
    if (payload === 'integrations' || payload === 'tools' || payload === 'pricing') onChange(payload);
    else for (const part of ['integrations', 'tools', 'pricing'] as const) onChange(part);
  });
}
