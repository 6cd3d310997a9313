/**
 * `<AppsPage>`: the person's apps on a host page: each listed with its name, kind, version, when it
 * changed and whether its component changed since it was remixed; open one to see it (the version
 * the wire serves, its queries run as the person) with its version history; delete, copy, export
 * or import one. Plain HTML (headings, lists, buttons) in the package's `svc-` classes.
 */
import { type ChangeEvent, type ReactNode, useCallback, useEffect, useState } from 'react';
import type { AppAction } from './actions.js';
import { AppView } from './app-view.js';
import type { AppSummary, AppVersionReview } from './apps-client.js';
import { exportApp } from './apps-client.js';
import {
  type ActionOutcome,
  type AppsListState,
  deleteAppNamed,
  forkAppNamed,
  importAppFile,
  loadAppsList,
  messageOf,
  type OpenedAppState,
  openAppDetail,
} from './apps-page-state.js';
import { useServiceClient } from './provider.js';
import { callApp } from './wire.js';

export interface AppsPageProps {
  /** The page's heading; `Your apps` by default. */
  title?: string;
  /** Asks before Delete; `window.confirm` by default. */
  confirmDelete?: (question: string) => boolean | Promise<boolean>;
  /**
   * An app to open as the page loads (its id): a link that names one app, such as the URL the MCP
   * door's app-open card gives an outside agent, lands on that app with its history.
   */
  openAppId?: string;
}

export function AppsPage({ title, confirmDelete, openAppId }: AppsPageProps) {
  const client = useServiceClient();
  const [list, setList] = useState<AppsListState>({ status: 'loading' });
  const [opened, setOpened] = useState<OpenedAppState | null>(null);
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  const [busy, setBusy] = useState(false);

  const reload = useCallback(async () => setList(await loadAppsList(client)), [client]);
  useEffect(() => {
    void reload();
  }, [reload]);

  const act = async (step: () => Promise<ActionOutcome>) => {
    setBusy(true);
    try {
      const done = await step();
      setOutcome(done);
      await reload();
      return done;
    } finally {
      setBusy(false);
    }
  };
  const open = useCallback(
    async (id: string) => {
      setOpened({ status: 'loading', id });
      setOpened(await openAppDetail(client, id));
    },
    [client],
  );
  useEffect(() => {
    if (openAppId) void open(openAppId);
  }, [open, openAppId]);

  const handlers: AppsPageHandlers = {
    onOpen: (app) => void open(app.id),
    onClose: () => setOpened(null),
    onFork: (app) =>
      void act(() => forkAppNamed(client, app)).then((done) => {
        if (done.appId) void open(done.appId);
      }),
    onDelete: (app) => {
      const ask = confirmDelete ?? ((question: string) => window.confirm(question));
      void Promise.resolve(
        ask(`Delete ${app.name}? Its versions go with it, and it leaves every place it shows.`),
      ).then((yes) => {
        if (!yes) return;
        void act(() => deleteAppNamed(client, app)).then((done) => {
          if (done.ok) setOpened((current) => (current && openedId(current) === app.id ? null : current));
        });
      });
    },
    onExport: (app) =>
      void exportApp(client, app.id).then(
        (file) => download(file.fileName, file.text),
        (error) =>
          setOutcome({ ok: false, message: `${app.name} could not be exported: ${messageOf(error)}` }),
      ),
    onImport: (event) => {
      const file = event.target.files?.[0];
      event.target.value = '';
      if (!file) return;
      void file.text().then((text) =>
        act(() => importAppFile(client, text)).then((done) => {
          if (done.appId) void open(done.appId);
        }),
      );
    },
    onAction: async (action) => {
      if (action.type !== 'tool' || opened?.status !== 'ready') return;
      // A refusal throws: the button shows the wire's words.
      await callApp(client, opened.app.id, action);
      setOpened(await openAppDetail(client, opened.app.id));
    },
  };

  return (
    <AppsPageView title={title} list={list} opened={opened} outcome={outcome} busy={busy} {...handlers} />
  );
}

function openedId(state: OpenedAppState): string {
  return state.status === 'ready' ? state.app.id : state.id;
}

/** Saves the export file the way a browser downloads: an object URL on a clicked link. */
function download(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

export interface AppsPageHandlers {
  onOpen?(app: AppSummary): void;
  onClose?(): void;
  onFork?(app: AppSummary): void;
  onDelete?(app: AppSummary): void;
  onExport?(app: AppSummary): void;
  onImport?(event: ChangeEvent<HTMLInputElement>): void;
  onAction?: (action: AppAction) => void | Promise<void>;
}

export interface AppsPageViewProps extends AppsPageHandlers {
  title?: string;
  list: AppsListState;
  opened: OpenedAppState | null;
  outcome: ActionOutcome | null;
  busy?: boolean;
}

const KIND_LABELS: Record<string, string> = { app: 'App', remix: 'Remix', review: 'Remix (reviewed)' };

/** What the apps page shows; no effects, so it renders on the server as in the browser. */
export function AppsPageView({
  title = 'Your apps',
  list,
  opened,
  outcome,
  busy = false,
  onOpen,
  onClose,
  onFork,
  onDelete,
  onExport,
  onImport,
  onAction,
}: AppsPageViewProps) {
  return (
    <section className="svc-page svc-apps-page" aria-label={title}>
      <h2 className="svc-heading svc-heading-1">{title}</h2>
      {outcome ? <Outcome outcome={outcome} /> : null}
      <p className="svc-page-import">
        <label>
          Import an app from a file{' '}
          <input type="file" accept=".json,application/json" onChange={onImport} disabled={busy} />
        </label>
      </p>
      {list.status === 'loading' ? (
        <p className="svc-text svc-tone-muted" aria-busy="true">
          Loading your apps…
        </p>
      ) : list.status === 'failed' ? (
        <p className="svc-text">Your apps could not be listed: {list.message}</p>
      ) : list.apps.length === 0 ? (
        <p className="svc-text svc-tone-muted">You have no apps yet.</p>
      ) : (
        <ul className="svc-list svc-page-list">
          {list.apps.map((app) => (
            <li key={app.id} className="svc-list-item" data-service-app={app.id}>
              <div className="svc-list-main">
                <h3 className="svc-heading svc-heading-3">{app.name}</h3>
                <p className="svc-text svc-tone-muted">
                  {KIND_LABELS[app.kind] ?? app.kind} · version {app.version} · updated{' '}
                  <time dateTime={app.updatedAt}>{when(app.updatedAt)}</time>
                  {app.drifted ? (
                    <>
                      {' '}
                      <span className="svc-badge svc-tone-warning">Component changed</span>
                    </>
                  ) : null}
                </p>
              </div>
              <div className="svc-row svc-align-center svc-justify-end" style={{ gap: 8 }}>
                <PageButton onClick={() => onOpen?.(app)} busy={busy} label={`Open ${app.name}`}>
                  Open
                </PageButton>
                <PageButton onClick={() => onFork?.(app)} busy={busy} label={`Fork ${app.name}`}>
                  Fork
                </PageButton>
                <PageButton onClick={() => onExport?.(app)} busy={busy} label={`Export ${app.name}`}>
                  Export
                </PageButton>
                <PageButton onClick={() => onDelete?.(app)} busy={busy} label={`Delete ${app.name}`} danger>
                  Delete
                </PageButton>
              </div>
            </li>
          ))}
        </ul>
      )}
      {opened ? <OpenedApp opened={opened} onClose={onClose} onAction={onAction} /> : null}
    </section>
  );
}

function OpenedApp({
  opened,
  onClose,
  onAction,
}: {
  opened: OpenedAppState;
  onClose?(): void;
  onAction?: (action: AppAction) => void | Promise<void>;
}) {
  if (opened.status === 'loading') {
    return (
      <section className="svc-page-detail" aria-busy="true">
        <p className="svc-text svc-tone-muted">Opening the app…</p>
      </section>
    );
  }
  if (opened.status === 'failed') {
    return (
      <section className="svc-page-detail">
        <p className="svc-text">The app could not be opened: {opened.message}</p>
      </section>
    );
  }
  const { app, history, served } = opened;
  return (
    <section className="svc-page-detail" aria-label={app.name} data-service-app={app.id}>
      <div className="svc-row svc-align-center svc-justify-between">
        <h3 className="svc-heading svc-heading-2">{app.name}</h3>
        <button type="button" className="svc-button svc-button-secondary" onClick={onClose}>
          Close
        </button>
      </div>
      {served ? (
        <AppView
          key={`${app.id}@${served.version}`}
          document={served.document}
          queries={served.queries}
          onAction={onAction}
        />
      ) : (
        <p className="svc-text svc-tone-muted">
          Nothing of this app shows yet: it is waiting for a reviewer to approve a version.
        </p>
      )}
      <h4 className="svc-heading svc-heading-3">Versions</h4>
      <ol className="svc-list svc-page-history">
        {history.map((version) => (
          <li key={version.version} className="svc-list-item">
            <span>
              Version {version.version}
              {served?.version === version.version ? ' (showing)' : ''}
            </span>
            <span className="svc-tone-muted">
              {version.review ? `${reviewWords(version.review)} · ` : ''}
              <time dateTime={version.createdAt}>{when(version.createdAt)}</time>
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Outcome({ outcome }: { outcome: ActionOutcome }) {
  return (
    <div className={`svc-page-outcome${outcome.ok ? '' : ' svc-page-outcome-refused'}`} role="status">
      <p className="svc-text">{outcome.message}</p>
      {outcome.problems ? (
        <ul className="svc-page-problems">
          {outcome.problems.map((problem, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the wire's list, shown once as it came
            <li key={index}>
              {problem.path ? <code>{problem.path}</code> : null}
              {problem.path ? ': ' : ''}
              {problem.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function PageButton({
  onClick,
  busy,
  label,
  danger = false,
  children,
}: {
  onClick(): void;
  busy: boolean;
  label: string;
  danger?: boolean;
  children: ReactNode;
}) {
  return (
    <button
      type="button"
      className={`svc-button ${danger ? 'svc-button-danger' : 'svc-button-secondary'}`}
      onClick={onClick}
      disabled={busy}
      aria-label={label}
    >
      {children}
    </button>
  );
}

/** A version's review in words: `approved`, `pending`, `rejected: <the reviewer's note>`. */
function reviewWords(review: AppVersionReview): string {
  return review.status === 'rejected' && review.note ? `rejected: ${review.note}` : review.status;
}

/** A timestamp as `2030-01-05 14:03 UTC`: the same text on the server and in the browser. */
export function when(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
