/**
 * What `<AppsPage>` shows, as data: the person's apps, the one they opened (its served version
 * with its queries run, and its version history), and the outcome of each action in words. Each
 * function asks the wire and answers the next state, so the page is a thin shell and the logic is
 * testable against a real wire.
 */
import {
  type AppDetail,
  type AppSummary,
  type AppVersionInfo,
  appHistory,
  deleteApp,
  forkApp,
  getApp,
  importApp,
  listApps,
} from './apps-client.js';
import { openApp, type PlacedApp, WireCallError, type WireClient } from './wire.js';

export type AppsListState =
  | { status: 'loading' }
  | { status: 'ready'; apps: AppSummary[] }
  | { status: 'failed'; message: string };

export type OpenedAppState =
  | { status: 'loading'; id: string }
  /** `served` is null while nothing of the app serves (a review remix nobody approved yet). */
  | { status: 'ready'; app: AppDetail; history: AppVersionInfo[]; served: PlacedApp | null }
  | { status: 'failed'; id: string; message: string };

/** What an action did, in words; a refused import lists the wire's problems with the file. */
export interface ActionOutcome {
  ok: boolean;
  message: string;
  problems?: { path: string; message: string }[];
  /** The app the action made (a fork, an import), to open it. */
  appId?: string;
}

export async function loadAppsList(client: WireClient): Promise<AppsListState> {
  try {
    return { status: 'ready', apps: await listApps(client) };
  } catch (error) {
    return { status: 'failed', message: messageOf(error) };
  }
}

export async function openAppDetail(client: WireClient, id: string): Promise<OpenedAppState> {
  try {
    const [app, history, served] = await Promise.all([
      getApp(client, id),
      appHistory(client, id),
      openApp(client, id),
    ]);
    return { status: 'ready', app, history, served };
  } catch (error) {
    return { status: 'failed', id, message: messageOf(error) };
  }
}

export async function deleteAppNamed(
  client: WireClient,
  app: { id: string; name: string },
): Promise<ActionOutcome> {
  try {
    await deleteApp(client, app.id);
    return { ok: true, message: `Deleted ${app.name}.` };
  } catch (error) {
    return { ok: false, message: `${app.name} could not be deleted: ${messageOf(error)}` };
  }
}

export async function forkAppNamed(
  client: WireClient,
  app: { id: string; name: string },
): Promise<ActionOutcome> {
  try {
    const fork = await forkApp(client, app.id);
    return { ok: true, message: `Made ${fork.name}, a copy of ${app.name}.`, appId: fork.id };
  } catch (error) {
    return { ok: false, message: `${app.name} could not be copied: ${messageOf(error)}` };
  }
}

/** Imports an export file's text; a refusal carries the wire's message and its list of problems. */
export async function importAppFile(client: WireClient, fileText: string): Promise<ActionOutcome> {
  try {
    const { app, created } = await importApp(client, fileText);
    return {
      ok: true,
      message: created ? `Imported ${app.name}.` : `You already have ${app.name}: your remix is unchanged.`,
      appId: app.id,
    };
  } catch (error) {
    const problems = error instanceof WireCallError ? problemsOf(error.details.problems) : [];
    return {
      ok: false,
      message: `The file could not be imported: ${messageOf(error)}`,
      ...(problems.length > 0 ? { problems } : {}),
    };
  }
}

function problemsOf(value: unknown): { path: string; message: string }[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((problem) =>
    problem && typeof problem.message === 'string'
      ? [{ path: typeof problem.path === 'string' ? problem.path : '', message: problem.message }]
      : [],
  );
}

export function messageOf(error: unknown): string {
  return error instanceof WireCallError ? error.message : 'The service could not be reached.';
}
