/**
 * `<Remixable>`: a host component the person may remix in place. `service sync` finds these
 * wrappers by their `id`, and the element it renders carries `data-service-remixable={id}` (laid
 * out with `display: contents`, so the page's layout is untouched).
 *
 * Inside a `<ServiceProvider>` it finds the person's remix of the component and shows it instead
 * of the children, with small controls to remix, update and revert. Outside a provider, or when
 * the wire refuses (apps off, nobody signed in), it shows the host's children and nothing else.
 */
import { type ReactNode, useCallback, useEffect, useState } from 'react';
import type { AppAction } from './actions.js';
import { AppView } from './app-view.js';
import type { AppSummary } from './apps-client.js';
import { useProvidedServiceClient } from './provider.js';
import {
  loadRemix,
  type RemixNote,
  type RemixState,
  remixComponent,
  revertRemix,
  updateRemix,
} from './remix-state.js';
import { callApp } from './wire.js';

/** What a host's own controls are handed: the state, and the actions the built-in controls run. */
export interface RemixControls {
  state: RemixState;
  /** An action is under way: the controls should not start another. */
  busy: boolean;
  /** Makes the person's remix from the component's seed and shows it. */
  remix(): void;
  /** Deletes the remix (after `confirmRevert`) and shows the host's children again. */
  revert(): void;
  /** Moves a drifted remix onto the component's current version. */
  update(): void;
}

/** The remix a host is handed to edit it (open its chat with it, say). */
export interface RemixInfo {
  appId: string;
  component: string;
  name: string;
  /**
   * True when pressing Remix made the remix; false when the wire answered the one the person
   * already had (a remix made meanwhile, in another tab), or they chose to edit an existing one.
   */
  created: boolean;
}

export interface RemixableProps {
  /** The component's stable key, which names its baseline: keep it when the component changes. */
  id: string;
  /** The host's own component: shown unless the person has a remix the wire serves. */
  children?: ReactNode;
  /** `false` hides the built-in controls; a function renders the host's own in their place. */
  controls?: boolean | ((controls: RemixControls) => ReactNode);
  /**
   * Called once the person has a remix to edit: right after Remix, and from an **Edit** control
   * shown beside an existing remix when this is set. A host opens its chat with the remix here.
   */
  onRemix?: (remix: RemixInfo) => void;
  /** Asks before Revert deletes the remix; `window.confirm` by default. */
  confirmRevert?: (question: string) => boolean | Promise<boolean>;
  /**
   * Called for each action a button of the remix runs. Unset: a tool button is pressed over the
   * wire (`POST /apps/:id/call`) and the remix is opened again to show what changed.
   */
  onAction?: (action: AppAction) => void | Promise<void>;
}

export const REVERT_QUESTION = 'Revert to the original? Your remix of this component is deleted.';

export function Remixable({
  id,
  children,
  controls = true,
  onRemix,
  confirmRevert,
  onAction,
}: RemixableProps) {
  const client = useProvidedServiceClient();
  const [state, setState] = useState<RemixState>(client ? { status: 'loading' } : { status: 'host' });
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!client) {
      setState({ status: 'host' });
      return;
    }
    let live = true;
    setState({ status: 'loading' });
    void loadRemix(client, id).then((next) => {
      if (live) setState(next);
    });
    return () => {
      live = false;
    };
  }, [client, id]);

  const run = useCallback(async (step: () => Promise<RemixState>) => {
    setBusy(true);
    try {
      const next = await step();
      setState(next);
      return next;
    } finally {
      setBusy(false);
    }
  }, []);

  const api: RemixControls = {
    state,
    busy,
    remix: () => {
      if (!client || busy) return;
      void run(() => remixComponent(client, id)).then((next) => {
        const remix = 'remix' in next ? next.remix : null;
        const created = 'created' in next && next.created === true;
        if (remix) onRemix?.({ appId: remix.id, component: id, name: remix.name, created });
      });
    },
    revert: () => {
      if (!client || busy || !('remix' in state)) return;
      const current = state;
      const ask = confirmRevert ?? ((question: string) => window.confirm(question));
      void Promise.resolve(ask(REVERT_QUESTION)).then((yes) => {
        if (yes) void run(() => revertRemix(client, current));
      });
    },
    update: () => {
      if (!client || busy || !('remix' in state)) return;
      const current = state;
      void run(() => updateRemix(client, current));
    },
  };

  const appId = state.status === 'remixed' ? state.app.id : null;
  const press = useCallback(
    async (action: AppAction) => {
      if (action.type !== 'tool' || !client || appId === null) return;
      // A refusal throws: the button shows the wire's words; the remix keeps showing.
      await callApp(client, appId, action);
      setState(await loadRemix(client, id));
    },
    [client, appId, id],
  );

  const edit =
    onRemix && 'remix' in state
      ? () => onRemix({ appId: state.remix.id, component: id, name: state.remix.name, created: false })
      : undefined;

  return (
    <RemixableView
      id={id}
      state={state}
      busy={busy}
      controls={typeof controls === 'function' ? (controls(api) ?? null) : controls ? undefined : null}
      onRemix={api.remix}
      onRevert={api.revert}
      onUpdate={api.update}
      onEdit={edit}
      onAction={onAction ?? press}
    >
      {children}
    </RemixableView>
  );
}

export interface RemixableViewProps {
  id: string;
  state: RemixState;
  busy?: boolean;
  /** The host's own controls in place of the built-in ones (`null`: none); unset: the built-in ones. */
  controls?: ReactNode;
  onRemix?(): void;
  onRevert?(): void;
  onUpdate?(): void;
  onEdit?(): void;
  onAction?: (action: AppAction) => void | Promise<void>;
  children?: ReactNode;
}

/** What a `<Remixable>` shows in each state; no effects, so it renders on the server as in the browser. */
export function RemixableView({
  id,
  state,
  busy = false,
  controls,
  onRemix,
  onRevert,
  onUpdate,
  onEdit,
  onAction,
  children,
}: RemixableViewProps) {
  if (state.status === 'host' || state.status === 'loading') {
    return (
      <div className="svc-remixable" data-service-remixable={id}>
        {children}
      </div>
    );
  }
  const shown =
    state.status === 'remixed' ? (
      <AppView
        key={`${state.app.id}@${state.app.version}`}
        document={state.app.document}
        queries={state.app.queries}
        onAction={onAction}
      />
    ) : (
      children
    );
  const builtIn = (
    <div className="svc-remix-controls" aria-busy={busy || undefined}>
      {state.status === 'original' ? (
        <button type="button" className="svc-remix-button" onClick={onRemix} disabled={busy}>
          Remix
        </button>
      ) : (
        <RemixedControls
          remix={state.remix}
          pending={state.status === 'pending'}
          busy={busy}
          {...{ onRevert, onUpdate, onEdit }}
        />
      )}
      {state.note ? <RemixNoteLine note={state.note} /> : null}
    </div>
  );
  return (
    <div
      className="svc-remixable"
      data-service-remixable={id}
      {...(state.status === 'remixed' ? { 'data-service-app': state.app.id } : {})}
    >
      {shown}
      {controls === undefined ? builtIn : controls}
    </div>
  );
}

function RemixedControls({
  remix,
  pending,
  busy,
  onRevert,
  onUpdate,
  onEdit,
}: {
  remix: AppSummary;
  pending: boolean;
  busy: boolean;
  onRevert?(): void;
  onUpdate?(): void;
  onEdit?(): void;
}) {
  return (
    <>
      {pending ? (
        <p className="svc-remix-note">
          Your remix is waiting for review; the original shows until it is approved.
        </p>
      ) : null}
      {remix.drifted ? (
        <p className="svc-remix-note" role="status">
          This component changed since you remixed it.{' '}
          <button type="button" className="svc-remix-button" onClick={onUpdate} disabled={busy}>
            Update
          </button>
        </p>
      ) : null}
      {onEdit ? (
        <button type="button" className="svc-remix-button" onClick={onEdit} disabled={busy}>
          Edit
        </button>
      ) : null}
      <button type="button" className="svc-remix-button" onClick={onRevert} disabled={busy}>
        Revert
      </button>
    </>
  );
}

function RemixNoteLine({ note }: { note: RemixNote }) {
  switch (note.kind) {
    case 'updated':
      return (
        <p className="svc-remix-note" role="status">
          Updated to version {note.version}: {plural(note.replayed, 'change')} replayed.
        </p>
      );
    case 'update-failed':
      return (
        <p className="svc-remix-note svc-remix-note-warning" role="status">
          Could not update: {plural(note.replayed, 'change')} replayed, {note.failed} failed, {note.remaining}{' '}
          not tried. The change that failed: “{note.wish}”. Your remix is unchanged.
        </p>
      );
    case 'refused':
      return (
        <p className="svc-remix-note svc-remix-note-warning" role="status">
          {note.message}
        </p>
      );
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
