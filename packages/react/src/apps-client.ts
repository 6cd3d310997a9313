/**
 * The apps routes of the wire as functions: the person's apps (list, read, history, delete, fork,
 * export, import), their remixes of the host's components (seed, rebase-pin), and the review
 * queue. Each throws a `WireCallError` carrying the wire's own words when it refuses.
 */
import type { AppDocument } from './document.js';
import { call, callText, type WireClient } from './wire.js';

export type AppKind = 'app' | 'remix' | 'review';

/** One of the person's apps as the wire lists it. */
export interface AppSummary {
  id: string;
  name: string;
  kind: AppKind;
  /** For a remix: the host component it remixes, and the hash of the seed it was forked from. */
  baselineKey: string | null;
  baselineHash: string | null;
  forkedFrom: string | null;
  version: number;
  /** The version the wire serves (a review remix: the approved one; null while none is). */
  servedVersion: number | null;
  approvedHash: string | null;
  createdAt: string;
  updatedAt: string;
  /** A remix whose component changed since it was remixed (false when the wire does not say). */
  drifted: boolean;
}

export interface AppVersionInfo {
  version: number;
  contentHash: string;
  /** A review remix's version: its decision, or pending; null for the other kinds. */
  review: AppVersionReview | null;
  createdAt: string;
}

/** Where a review remix's version stands, as the wire answers it. */
export interface AppVersionReview {
  status: 'pending' | 'approved' | 'rejected';
  /** Why it was rejected. */
  note: string | null;
  reviewedBy: string | null;
  reviewedAt: string | null;
}

/** An app with its current version's document. */
export interface AppDetail extends AppSummary {
  current: AppVersionInfo & { document: AppDocument };
}

/** An app answer read with `drifted` defaulting to false, so a wire that does not send it reads as "not drifted". */
function summary<T extends { drifted?: unknown }>(app: T): T & { drifted: boolean } {
  return { ...app, drifted: app.drifted === true };
}

const appPath = (id: string, rest = '') => `/apps/${encodeURIComponent(id)}${rest}`;

export async function listApps(client: WireClient, limit = 200): Promise<AppSummary[]> {
  const answer = await call<{ apps: AppSummary[] }>(client, `/apps?limit=${limit}`);
  return answer.apps.map(summary);
}

/**
 * The person's remix of the host's `component` (`GET /apps?component=`): their remix or review app
 * whose baseline is that component, or null when they have none.
 */
export async function findRemix(client: WireClient, component: string): Promise<AppSummary | null> {
  const answer = await call<{ apps: AppSummary[] }>(
    client,
    `/apps?component=${encodeURIComponent(component)}`,
  );
  const [remix] = answer.apps;
  return remix ? summary(remix) : null;
}

export async function getApp(client: WireClient, id: string): Promise<AppDetail> {
  return summary((await call<{ app: AppDetail }>(client, appPath(id))).app);
}

export async function appHistory(client: WireClient, id: string): Promise<AppVersionInfo[]> {
  return (await call<{ versions: AppVersionInfo[] }>(client, appPath(id, '/history'))).versions;
}

/** Deletes the app and clears every slot it was placed in. */
export async function deleteApp(client: WireClient, id: string): Promise<void> {
  await call(client, appPath(id), { method: 'DELETE' });
}

/** A copy of the app as a new app of the person's, named `name` or after the original. */
export async function forkApp(client: WireClient, id: string, name?: string): Promise<AppDetail> {
  const body = name === undefined ? {} : { name };
  return summary(
    (await call<{ app: AppDetail }>(client, appPath(id, '/fork'), { method: 'POST', body })).app,
  );
}

/** The app's export file, as the wire wrote it, and the name to save it under. */
export async function exportApp(client: WireClient, id: string): Promise<{ fileName: string; text: string }> {
  const text = await callText(client, appPath(id, '/export'));
  return { fileName: `${id}.service-app.json`, text };
}

/**
 * Imports an export file: its text is sent as it is, so the wire's own checks (and their
 * `problems`, on the `WireCallError`'s `details`) speak about the file itself.
 */
export async function importApp(
  client: WireClient,
  fileText: string,
): Promise<{ app: AppDetail; created: boolean }> {
  const answer = await call<{ app: AppDetail; created: boolean }>(client, '/apps/import', {
    method: 'POST',
    rawBody: fileText,
  });
  return { app: summary(answer.app), created: answer.created };
}

/** The person's remix of the host component `component`, made from its seed if they have none. */
export async function seedRemix(
  client: WireClient,
  component: string,
): Promise<{ app: AppDetail; created: boolean }> {
  const answer = await call<{ app: AppDetail; created: boolean }>(client, '/apps/seed', {
    method: 'POST',
    body: { component },
  });
  return { app: summary(answer.app), created: answer.created };
}

/**
 * Moves a drifted remix onto its component's current seed, replaying its wishes
 * (`POST /apps/:id/rebase-pin`). `fromVersion` makes the wire refuse (`app_moved`) if the remix
 * changed since the page read it.
 */
export async function rebaseRemix(
  client: WireClient,
  id: string,
  fromVersion?: number,
): Promise<{ app: AppDetail; replayed: number }> {
  const answer = await call<{ app: AppDetail; replayed: number }>(client, appPath(id, '/rebase-pin'), {
    method: 'POST',
    body: fromVersion === undefined ? {} : { fromVersion },
  });
  return { app: summary(answer.app), replayed: answer.replayed };
}

/** A review remix's version waiting for a reviewer. */
export interface ReviewItem {
  appId: string;
  owner: string;
  name: string;
  baselineKey: string | null;
  version: number;
  contentHash: string;
  createdAt: string;
}

export async function reviewQueue(client: WireClient, limit = 50): Promise<ReviewItem[]> {
  return (await call<{ queue: ReviewItem[] }>(client, `/apps/review-queue?limit=${limit}`)).queue;
}

/** One item of the queue with the pending version's document, as a reviewer may read it. */
export async function reviewItem(
  client: WireClient,
  appId: string,
): Promise<ReviewItem & { document: AppDocument }> {
  return (
    await call<{ item: ReviewItem & { document: AppDocument } }>(
      client,
      `/apps/review-queue/${encodeURIComponent(appId)}`,
    )
  ).item;
}

/** Approves exactly the version whose content hash is `contentHash`. */
export async function approveReview(client: WireClient, appId: string, contentHash: string): Promise<number> {
  const answer = await call<{ version: number }>(
    client,
    `/apps/review-queue/${encodeURIComponent(appId)}/approve`,
    {
      method: 'POST',
      body: { contentHash },
    },
  );
  return answer.version;
}

/** Rejects exactly the version whose content hash is `contentHash`, saying why. */
export async function rejectReview(
  client: WireClient,
  appId: string,
  contentHash: string,
  note: string,
): Promise<number> {
  const answer = await call<{ version: number }>(
    client,
    `/apps/review-queue/${encodeURIComponent(appId)}/reject`,
    {
      method: 'POST',
      body: { contentHash, note },
    },
  );
  return answer.version;
}
