/**
 * What `<ReviewQueue>` shows, as data: the review remixes waiting for a reviewer, each with a
 * preview of its pending version, and the outcome of an approval or a rejection. Each function
 * asks the wire and answers the next state, so the component is a thin shell and the logic is
 * testable against a real wire.
 *
 * A reviewer reads the pending version's document (`GET /apps/review-queue/:id`), not the owner's
 * data: the document's queries run as whoever opens an app, and a reviewer is not the owner, so
 * the preview shows the document with its query bindings reading as nothing.
 */

import { approveReview, type ReviewItem, rejectReview, reviewItem, reviewQueue } from './apps-client.js';
import { messageOf } from './apps-page-state.js';
import type { AppDocument } from './document.js';
import { WireCallError, type WireClient } from './wire.js';

/** One item of the queue, with its pending document once loaded (null: not loaded, or gone). */
export interface ReviewEntry {
  item: ReviewItem;
  document: AppDocument | null;
  /** What the last decision on it answered, when it did not go through. */
  message?: string;
}

export type ReviewQueueState =
  | { status: 'loading' }
  /** A non-reviewer, or the wire refused: its words, as a plain message. */
  | { status: 'refused'; message: string }
  | { status: 'ready'; entries: ReviewEntry[] };

export const NOTE_REQUIRED = 'A note saying why is required to reject a version.';

/** The queue with each item's pending document. */
export async function loadReviewQueue(client: WireClient): Promise<ReviewQueueState> {
  try {
    const queue = await reviewQueue(client);
    const entries = await Promise.all(queue.map((item) => withDocument(client, item)));
    return { status: 'ready', entries: entries.filter((entry): entry is ReviewEntry => entry !== null) };
  } catch (error) {
    return { status: 'refused', message: messageOf(error) };
  }
}

/** The item as the wire has it now; null when nothing of it waits for review any more. */
async function withDocument(client: WireClient, item: ReviewItem): Promise<ReviewEntry | null> {
  try {
    const current = await reviewItem(client, item.appId);
    const { document, ...rest } = current;
    return { item: rest, document };
  } catch (error) {
    if (error instanceof WireCallError && error.code === 'not_found') return null;
    return { item, document: null, message: messageOf(error) };
  }
}

/**
 * The outcome of a decision: `decided` (the item leaves the queue), `refused` (the same item with
 * the wire's words: a note missing, say), or `reloaded` when the version moved on or was decided
 * elsewhere (`review_stale`, `review_not_pending`): the item as it stands now, or null when
 * nothing of it waits any more, with the wire's message.
 */
export type DecisionOutcome =
  | { status: 'decided'; version: number; message: string }
  | { status: 'refused'; message: string }
  | { status: 'reloaded'; entry: ReviewEntry | null; message: string };

export async function decideReview(
  client: WireClient,
  entry: ReviewEntry,
  decision: { approve: true } | { approve: false; note: string },
): Promise<DecisionOutcome> {
  const { appId, contentHash, name } = entry.item;
  if (!decision.approve && decision.note.trim() === '') return { status: 'refused', message: NOTE_REQUIRED };
  try {
    const version = decision.approve
      ? await approveReview(client, appId, contentHash)
      : await rejectReview(client, appId, contentHash, decision.note.trim());
    return {
      status: 'decided',
      version,
      message: `${decision.approve ? 'Approved' : 'Rejected'} version ${version} of ${name}.`,
    };
  } catch (error) {
    if (
      error instanceof WireCallError &&
      (error.code === 'review_stale' || error.code === 'review_not_pending')
    ) {
      const reloaded = await withDocument(client, entry.item);
      return {
        status: 'reloaded',
        entry: reloaded && { ...reloaded, message: error.message },
        message: error.message,
      };
    }
    return { status: 'refused', message: messageOf(error) };
  }
}
