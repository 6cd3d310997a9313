/**
 * The content hash of an app document: sha256 of its canonical JSON (keys sorted at every depth).
 * Approvals name a hash, so a reviewer approves exactly one content, whatever its key order.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../internal/canonical-json.js';
import type { AppDocument } from './document.js';

/** Lowercase hex sha256 of the canonical JSON of `document`. */
export function contentHash(document: AppDocument): string {
  return createHash('sha256').update(canonicalJson(document), 'utf8').digest('hex');
}
