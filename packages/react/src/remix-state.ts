/**
 * What a `<Remixable>` shows, as data: each function asks the wire and answers the next state,
 * so the component is a thin shell and the logic is testable against a real wire.
 *
 * - `host`: the host's own children and nothing else: no provider, or the wire refused (apps
 *   off, nobody signed in). A host page never gets an error box from its remixable parts.
 * - `loading`: asking the wire (the host's children show meanwhile).
 * - `original`: the person has no remix of this component: the children and a **Remix** control.
 * - `pending`: a review remix nobody approved yet: the wire serves the host's original, so the
 *   children show with a "waiting for review" note.
 * - `remixed`: the person's remix, as the wire serves it.
 *
 * `note` is a line beside the controls saying what just happened (updated, a failed update, a
 * refused action), never an alert.
 */
import { type AppSummary, deleteApp, findRemix, rebaseRemix, seedRemix } from './apps-client.js';
import { openApp, type PlacedApp, WireCallError, type WireClient } from './wire.js';

export type RemixNote =
  | { kind: 'updated'; version: number; replayed: number }
  | {
      kind: 'update-failed';
      replayed: number;
      failed: number;
      remaining: number;
      wish: string;
      message: string;
    }
  | { kind: 'refused'; message: string };

export type RemixState =
  | { status: 'host' }
  | { status: 'loading' }
  | { status: 'original'; note?: RemixNote }
  | { status: 'pending'; remix: AppSummary; note?: RemixNote }
  | { status: 'remixed'; remix: AppSummary; app: PlacedApp; note?: RemixNote };

/** A state that shows one of the person's remixes. */
export type RemixShown = Extract<RemixState, { remix: AppSummary }>;

function withNote(state: RemixState, note: RemixNote): RemixState {
  return state.status === 'host' || state.status === 'loading' ? state : { ...state, note };
}

export async function loadRemix(client: WireClient, component: string): Promise<RemixState> {
  try {
    const remix = await findRemix(client, component);
    if (!remix) return { status: 'original' };
    return await shown(client, remix);
  } catch {
    // Apps off, nobody signed in, the wire unreachable: the host's page shows as the host wrote it.
    return { status: 'host' };
  }
}

/**
 * Makes the person's remix of `component` from its seed (`POST /apps/seed`) and shows it.
 * `created` says whether the wire made it now (false: it answered the remix the person already had).
 */
export async function remixComponent(
  client: WireClient,
  component: string,
): Promise<RemixState & { created?: boolean }> {
  try {
    const { app, created } = await seedRemix(client, component);
    return { ...(await shown(client, app)), created };
  } catch (error) {
    return { status: 'original', note: refused(error) };
  }
}

/** Reverts to the host's component: deletes the remix (which clears its placements too). */
export async function revertRemix(client: WireClient, current: RemixShown): Promise<RemixState> {
  try {
    await deleteApp(client, current.remix.id);
    return { status: 'original' };
  } catch (error) {
    // Gone already (deleted elsewhere): the host's component is what shows either way.
    if (error instanceof WireCallError && error.code === 'not_found') return { status: 'original' };
    return withNote(current, refused(error));
  }
}

/**
 * Moves a drifted remix onto the component's current version (`POST /apps/:id/rebase-pin`). On
 * `rebase_failed` nothing changed: the same remix shows, with what replayed and the wish that did
 * not. Any other refusal (the remix moved, or is not drifted any more) reloads it with the wire's
 * words.
 */
export async function updateRemix(client: WireClient, current: RemixShown): Promise<RemixState> {
  try {
    const { app, replayed } = await rebaseRemix(client, current.remix.id, current.remix.version);
    return withNote(await shown(client, app), { kind: 'updated', version: app.version, replayed });
  } catch (error) {
    if (error instanceof WireCallError && error.code === 'rebase_failed') {
      const count = (name: string) =>
        typeof error.details[name] === 'number' ? (error.details[name] as number) : 0;
      return withNote(current, {
        kind: 'update-failed',
        replayed: count('replayed'),
        failed: count('failed'),
        remaining: count('remaining'),
        wish: typeof error.details.wish === 'string' ? error.details.wish : '',
        message: error.message,
      });
    }
    return withNote(await reloadOr(client, current), refused(error));
  }
}

async function reloadOr(client: WireClient, current: RemixShown): Promise<RemixState> {
  try {
    const remix = await findRemix(client, current.remix.baselineKey ?? '');
    return remix ? await shown(client, remix) : { status: 'original' };
  } catch {
    return current;
  }
}

/** The remix as the wire serves it: its served version, or the host's original while a review waits. */
async function shown(client: WireClient, remix: AppSummary): Promise<RemixState> {
  const app = await openApp(client, remix.id);
  if (app === null) return { status: 'pending', remix };
  return { status: 'remixed', remix, app };
}

function refused(error: unknown): RemixNote {
  return {
    kind: 'refused',
    message: error instanceof WireCallError ? error.message : 'The service could not be reached.',
  };
}
