/**
 * What `POST /apps/import` takes: an [export file](./app-export.ts), read through a field
 * allowlist (a member the format does not name is refused, not ignored), its document checked
 * against the Kit and this host's tools before anything is written.
 *
 * Only the document, the name, the kind and the provenance (the baseline a remix was forked at,
 * the app it was exported from) are read. The file's `contentHash` is never trusted: the hash is
 * computed again from the checked document. The file's app id is never the new app's id: it is
 * kept only as `forkedFrom`.
 *
 * @see docs/wire.md "Import"
 */
import { z } from 'zod';
import { SLOT_ID, SLOT_ID_RULE } from '../options.js';
import { APP_EXPORT_FORMAT, APP_EXPORT_FORMAT_VERSION } from './app-export.js';

/**
 * Largest import body: a document may hold 64 KiB, and the file's other members are a few
 * hundred bytes; the rest is room for a file someone re-indented.
 */
export const APP_IMPORT_MAX_BYTES = 192 * 1024;

/** What `newId('app')` makes, with room to spare. */
export const APP_ID = /^app_[A-Za-z0-9_-]{1,64}$/;

export const appImportFile = z
  .strictObject({
    format: z.literal(APP_EXPORT_FORMAT, `must be "${APP_EXPORT_FORMAT}" (a file GET /apps/:id/export made)`),
    formatVersion: z.literal(APP_EXPORT_FORMAT_VERSION, `must be ${APP_EXPORT_FORMAT_VERSION}`),
    name: z.string().trim().min(1).max(200),
    kind: z.enum(['app', 'remix', 'review']).default('app'),
    document: z.unknown().refine((value) => value !== undefined, 'is required'),
    /** Informational: the hash is computed again from the checked document. */
    contentHash: z.string().max(200).optional(),
    baseline: z
      .strictObject({
        key: z.string().regex(SLOT_ID, SLOT_ID_RULE),
        hash: z.string().min(1).max(200),
      })
      .nullable()
      .default(null),
    source: z
      .strictObject({
        appId: z.string().regex(APP_ID, 'must be an app id (app_...)'),
        version: z.number().int().min(1),
      })
      .nullable()
      .default(null),
    exportedAt: z.iso.datetime().optional(),
  })
  .refine((file) => file.kind === 'app' || file.baseline !== null, {
    path: ['baseline'],
    message: 'a remix (kind remix or review) must name the baseline it was forked from',
  });

export type AppImportFile = z.infer<typeof appImportFile>;
