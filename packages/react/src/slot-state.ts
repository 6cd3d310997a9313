/**
 * What a slot shows, as data: `loadSlot` asks the wire and answers the next state, so the
 * component is a thin shell and the logic is testable against a real wire without a browser.
 *
 * - `empty`: nothing placed (or nobody signed in): the host's own children show.
 * - `loading`: asking the wire.
 * - `ready`: the placed app, rendered with the Kit.
 * - `failed`: the wire could not answer; the slot says so, offers a retry, and a clear that
 *   unplaces the app so the host's children come back.
 * - `building`: the agent is building an app into the slot; what the slot held (`prior`: the
 *   placed app, or the host's children) stays, with a note, until the build ends: then the slot
 *   loads again and shows the new app, or its prior content if the build failed.
 */
import {
  callApp,
  openApp,
  type PlacedApp,
  reportSlot,
  slotPlacement,
  unplace,
  WireCallError,
  type WireClient,
} from './wire.js';

export type SlotState =
  | { status: 'loading' }
  | { status: 'empty' }
  | { status: 'ready'; app: PlacedApp }
  | { status: 'failed'; message: string }
  | { status: 'building'; appId: string; since: string; prior: SlotContent };

/** What a slot shows when it is not loading, failing or being built. */
export type SlotContent = { status: 'empty' } | { status: 'ready'; app: PlacedApp };

/** How often a slot being built asks the wire whether the build has ended. */
export const BUILDING_POLL_MS = 2000;

export interface SlotRequest {
  id: string;
  label: string;
  page: string;
}

/** A client that remembers which slots it reported, so a slot reports once per page. */
export interface SlotClient extends WireClient {
  reported: Set<string>;
}

/**
 * Reads the slot's placement and what it shows. `prior` is what the slot shows now: while a build
 * targets the slot and the same app is still placed, that content stays as it is, so a slot polled
 * during a build does not open the app (and run its host queries) again on every poll. The app is
 * opened when the placed app changed, when the build ended, or when no prior is given (a return to
 * the page reads afresh).
 */
export async function loadSlot(
  client: SlotClient,
  slot: SlotRequest,
  prior?: SlotContent,
): Promise<SlotState> {
  try {
    const reportKey = `${slot.page}\n${slot.id}`;
    if (!client.reported.has(reportKey)) {
      await reportSlot(client, slot.page, { id: slot.id, label: slot.label });
      client.reported.add(reportKey);
    }
    const { appId, building } = await slotPlacement(client, slot.page, slot.id);
    if (building) {
      const kept =
        prior?.status === 'ready' && prior.app.id === appId ? prior : await contentOf(client, appId);
      return { status: 'building', appId: building.appId, since: building.since, prior: kept };
    }
    return await contentOf(client, appId);
  } catch (error) {
    // Nobody signed in, or the app went away between the two reads: nothing of the person's to show.
    if (
      error instanceof WireCallError &&
      (error.code === 'principal_required' || error.code === 'not_found')
    ) {
      return { status: 'empty' };
    }
    return { status: 'failed', message: failureMessage(error) };
  }
}

/** The placed app as the slot shows it, or the host's children when nothing of it serves. */
async function contentOf(client: WireClient, appId: string | null): Promise<SlotContent> {
  if (appId === null) return { status: 'empty' };
  const app = await openApp(client, appId);
  // A review app nobody approved yet serves the host's original.
  if (app === null) return { status: 'empty' };
  return { status: 'ready', app };
}

/**
 * Presses a tool button of the app the slot shows, over the wire (`POST /apps/:id/call`), then
 * loads the slot again so its queries show what the call changed. A refused call throws the
 * wire's own words (a `WireCallError`), which the button shows next to itself.
 */
export async function pressInSlot(
  client: SlotClient,
  slot: SlotRequest,
  appId: string,
  press: { tool: string; input: Record<string, unknown> },
): Promise<SlotState> {
  await callApp(client, appId, press);
  return loadSlot(client, slot);
}

/** Clears the slot: unplaces the app. Answers `empty`, or `failed` saying why it could not. */
export async function clearSlot(client: WireClient, slot: string): Promise<SlotState> {
  try {
    await unplace(client, slot);
    return { status: 'empty' };
  } catch (error) {
    return { status: 'failed', message: failureMessage(error) };
  }
}

function failureMessage(error: unknown): string {
  if (error instanceof WireCallError) return error.message;
  return 'The service could not be reached.';
}
