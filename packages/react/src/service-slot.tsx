/**
 * `<ServiceSlot>`: a named place on a host page where the person may put one of their apps. It
 * reports itself to the wire once per page, reads the person's placement for that page, and shows
 * the placed app as the wire opens it (its queries run as the person), or the host's own children
 * when there is none. While the agent builds an app into the slot, the slot keeps what it showed
 * with a small "Building…" note, and asks again every couple of seconds until the build ends.
 * When the page comes back into view (the person returns from another tab or app, where an agent
 * may have built into the slot), it reads the placement again, keeping what it shows meanwhile.
 */
import { type ReactNode, useCallback, useEffect, useState } from 'react';
import type { AppAction } from './actions.js';
import { AppView } from './app-view.js';
import { useServiceClient } from './provider.js';
import { BUILDING_POLL_MS, clearSlot, loadSlot, pressInSlot, type SlotState } from './slot-state.js';

export interface ServiceSlotProps {
  /** The slot's id: 1–128 of `A-Z a-z 0-9 . _ : -`, starting with a letter or digit. */
  id: string;
  /** What the person is told the slot is ("Orders sidebar"); the id by default. */
  label?: string;
  /** The page the slot is on; the location's path by default. */
  page?: string;
  /**
   * Called for each action a button of the placed app runs. Unset: a tool button is pressed over
   * the wire (`POST /apps/:id/call`, which runs it only if the app has that button) and the app is
   * opened again to show what changed.
   */
  onAction?: (action: AppAction) => void | Promise<void>;
  /** The host's own content, shown while nothing is placed. */
  children?: ReactNode;
}

export function ServiceSlot({ id, label, page, onAction, children }: ServiceSlotProps) {
  const client = useServiceClient();
  const [state, setState] = useState<SlotState>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` is the retry button's way to load again
  useEffect(() => {
    let live = true;
    setState({ status: 'loading' });
    const where = page ?? window.location.pathname;
    void loadSlot(client, { id, label: label ?? id, page: where }).then((next) => {
      if (live) setState(next);
    });
    return () => {
      live = false;
    };
  }, [client, id, label, page, attempt]);

  // While a build targets the slot, it asks again until the build ends (the new app, or what it held).
  const building = state.status === 'building' ? state.since : null;
  // Each answer still building (`state`) arms the next poll.
  useEffect(() => {
    if (building === null) return;
    let live = true;
    // What the slot shows stays as it is while the same app is placed: no re-open per poll.
    const prior = state.status === 'building' ? state.prior : undefined;
    const timer = setTimeout(() => {
      const where = page ?? window.location.pathname;
      void loadSlot(client, { id, label: label ?? id, page: where }, prior).then((next) => {
        if (live) setState(next);
      });
    }, BUILDING_POLL_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [client, id, label, page, building, state]);

  // Back in view: read again, quietly (no loading flash); focus and visibility often come together,
  // so one read at a time.
  useEffect(() => {
    let live = true;
    let reading = false;
    const reread = () => {
      if (document.visibilityState !== 'visible' || reading) return;
      reading = true;
      const where = page ?? window.location.pathname;
      void loadSlot(client, { id, label: label ?? id, page: where }).then((next) => {
        reading = false;
        if (live) setState(next);
      });
    };
    document.addEventListener('visibilitychange', reread);
    window.addEventListener('focus', reread);
    return () => {
      live = false;
      document.removeEventListener('visibilitychange', reread);
      window.removeEventListener('focus', reread);
    };
  }, [client, id, label, page]);

  const retry = useCallback(() => setAttempt((n) => n + 1), []);
  const shown = state.status === 'building' ? state.prior : state;
  const appId = shown.status === 'ready' ? shown.app.id : null;
  const press = useCallback(
    async (action: AppAction) => {
      if (action.type !== 'tool' || appId === null) return;
      const where = page ?? window.location.pathname;
      // A refusal throws: the button shows the wire's words; the slot keeps showing the app.
      setState(await pressInSlot(client, { id, label: label ?? id, page: where }, appId, action));
    },
    [client, id, label, page, appId],
  );
  const clear = useCallback(() => {
    setState({ status: 'loading' });
    void clearSlot(client, id).then(setState);
  }, [client, id]);

  return (
    <SlotView id={id} state={state} onRetry={retry} onClear={clear} onAction={onAction ?? press}>
      {children}
    </SlotView>
  );
}

export interface SlotViewProps {
  id: string;
  state: SlotState;
  onRetry(): void;
  onClear(): void;
  onAction?: (action: AppAction) => void | Promise<void>;
  children?: ReactNode;
}

/** What a slot shows in each state; no effects, so it renders on the server as in the browser. */
export function SlotView({ id, state, onRetry, onClear, onAction, children }: SlotViewProps) {
  switch (state.status) {
    case 'empty':
      return <>{children}</>;
    case 'loading':
      return (
        <div className="svc-slot svc-slot-loading" data-service-slot={id} aria-busy="true">
          <span className="svc-visually-hidden">Loading…</span>
        </div>
      );
    case 'building':
      // The slot keeps what it showed while the agent builds; a note says a new app is coming.
      return (
        <div
          className="svc-slot svc-slot-building"
          data-service-slot={id}
          data-service-building={state.appId}
          aria-busy="true"
        >
          <p className="svc-slot-note" role="status">
            Building…
          </p>
          {state.prior.status === 'ready' ? (
            <AppView
              key={`${state.prior.app.id}@${state.prior.app.version}`}
              document={state.prior.app.document}
              queries={state.prior.app.queries}
              onAction={onAction}
            />
          ) : (
            children
          )}
        </div>
      );
    case 'ready':
      return (
        <div className="svc-slot" data-service-slot={id} data-service-app={state.app.id}>
          <AppView
            key={`${state.app.id}@${state.app.version}`}
            document={state.app.document}
            queries={state.app.queries}
            onAction={onAction}
          />
        </div>
      );
    case 'failed':
      return (
        <div className="svc-slot svc-slot-failed" data-service-slot={id} role="alert">
          <p className="svc-slot-message">This space could not load the app placed here: {state.message}</p>
          <div className="svc-row svc-align-center svc-justify-start">
            <button type="button" className="svc-button svc-button-primary" onClick={onRetry}>
              Try again
            </button>
            <button type="button" className="svc-button svc-button-secondary" onClick={onClear}>
              Remove the app from this space
            </button>
          </div>
        </div>
      );
  }
}
