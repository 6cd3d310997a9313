/**
 * The file a person downloads of their app (`GET /apps/:id/export`) and can import again
 * (`POST /apps/import`, with the same media type): the current version's document and where it
 * came from, built field by field from an allowlist. Never in it: the owner, the edit trail (the
 * person's own words), review decisions and reviewers, the version history.
 *
 * @see docs/wire.md "Apps"
 */
import type { AppDocument, AppRecord, AppWithDocument } from './app-store.js';

/** Media type of an exported app; `POST /apps/import` takes the same. */
export const APP_EXPORT_MEDIA_TYPE = 'application/vnd.service.app+json';
export const APP_EXPORT_FORMAT = 'service-app';
export const APP_EXPORT_FORMAT_VERSION = 1;

export interface AppExport {
  format: typeof APP_EXPORT_FORMAT;
  formatVersion: typeof APP_EXPORT_FORMAT_VERSION;
  name: string;
  kind: AppRecord['kind'];
  document: AppDocument;
  contentHash: string;
  /** The host component a remix was forked from, at the baseline it was forked at. */
  baseline: { key: string; hash: string } | null;
  /** The exported app and version: an import remembers it as the app it was forked from. */
  source: { appId: string; version: number };
  exportedAt: string;
}

export function appExport(app: AppWithDocument, now: Date): AppExport {
  return {
    format: APP_EXPORT_FORMAT,
    formatVersion: APP_EXPORT_FORMAT_VERSION,
    name: app.name,
    kind: app.kind,
    document: app.current.document,
    contentHash: app.current.contentHash,
    baseline:
      app.baselineKey !== null && app.baselineHash !== null
        ? { key: app.baselineKey, hash: app.baselineHash }
        : null,
    source: { appId: app.id, version: app.current.version },
    exportedAt: now.toISOString(),
  };
}
