/**
 * `<ReviewQueue>`: for reviewers, the review remixes waiting for a decision: each with its owner,
 * name, version and when it was made, a preview of the pending version, and Approve (of exactly
 * that version, by its content hash) or Reject (with a note saying why, which the form requires).
 * Anyone else sees the wire's refusal as a plain message.
 */
import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { AppView } from './app-view.js';
import { when } from './apps-page.js';
import { useServiceClient } from './provider.js';
import { decideReview, loadReviewQueue, type ReviewEntry, type ReviewQueueState } from './review-state.js';

export interface ReviewQueueProps {
  /** The queue's heading; `Waiting for review` by default. */
  title?: string;
}

export function ReviewQueue({ title }: ReviewQueueProps) {
  const client = useServiceClient();
  const [state, setState] = useState<ReviewQueueState>({ status: 'loading' });
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    void loadReviewQueue(client).then((next) => {
      if (live) setState(next);
    });
    return () => {
      live = false;
    };
  }, [client]);

  const replace = useCallback((appId: string, entry: ReviewEntry | null) => {
    setState((current) =>
      current.status !== 'ready'
        ? current
        : {
            status: 'ready',
            entries: current.entries.flatMap((each) =>
              each.item.appId !== appId ? [each] : entry ? [entry] : [],
            ),
          },
    );
  }, []);

  const decide = async (
    entry: ReviewEntry,
    decision: { approve: true } | { approve: false; note: string },
  ) => {
    setBusy(entry.item.appId);
    try {
      const outcome = await decideReview(client, entry, decision);
      if (outcome.status === 'decided') {
        replace(entry.item.appId, null);
        setNotice(outcome.message);
      } else if (outcome.status === 'reloaded') {
        replace(entry.item.appId, outcome.entry);
        setNotice(outcome.entry ? null : outcome.message);
      } else {
        replace(entry.item.appId, { ...entry, message: outcome.message });
      }
    } finally {
      setBusy(null);
    }
  };

  return (
    <ReviewQueueView
      title={title}
      state={state}
      notice={notice}
      busy={busy}
      onApprove={(entry) => void decide(entry, { approve: true })}
      onReject={(entry, note) => void decide(entry, { approve: false, note })}
    />
  );
}

export interface ReviewQueueViewProps {
  title?: string;
  state: ReviewQueueState;
  /** What the last decision did, in words. */
  notice?: string | null;
  /** The app id a decision is under way for. */
  busy?: string | null;
  onApprove?(entry: ReviewEntry): void;
  onReject?(entry: ReviewEntry, note: string): void;
}

/** What the review queue shows; no effects beyond a note being typed, so it renders on the server. */
export function ReviewQueueView({
  title = 'Waiting for review',
  state,
  notice = null,
  busy = null,
  onApprove,
  onReject,
}: ReviewQueueViewProps) {
  return (
    <section className="svc-page svc-review-queue" aria-label={title}>
      <h2 className="svc-heading svc-heading-1">{title}</h2>
      {notice ? (
        <p className="svc-text svc-page-outcome" role="status">
          {notice}
        </p>
      ) : null}
      {state.status === 'loading' ? (
        <p className="svc-text svc-tone-muted" aria-busy="true">
          Loading the queue…
        </p>
      ) : state.status === 'refused' ? (
        <p className="svc-text">{state.message}</p>
      ) : state.entries.length === 0 ? (
        <p className="svc-text svc-tone-muted">Nothing is waiting for review.</p>
      ) : (
        <ul className="svc-list svc-page-list">
          {state.entries.map((entry) => (
            <ReviewItemView
              key={entry.item.appId}
              entry={entry}
              busy={busy === entry.item.appId}
              onApprove={onApprove}
              onReject={onReject}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

function ReviewItemView({
  entry,
  busy,
  onApprove,
  onReject,
}: {
  entry: ReviewEntry;
  busy: boolean;
  onApprove?(entry: ReviewEntry): void;
  onReject?(entry: ReviewEntry, note: string): void;
}) {
  const [note, setNote] = useState('');
  const { item } = entry;
  const noteId = `svc-review-note-${item.appId}`;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onReject?.(entry, note);
  };
  return (
    <li className="svc-page-review" data-service-app={item.appId}>
      <h3 className="svc-heading svc-heading-2">{item.name}</h3>
      <p className="svc-text svc-tone-muted">
        by {item.owner} · version {item.version} · made{' '}
        <time dateTime={item.createdAt}>{when(item.createdAt)}</time>
      </p>
      {entry.message ? (
        <p className="svc-text svc-page-outcome-refused" role="status">
          {entry.message}
        </p>
      ) : null}
      {entry.document ? (
        <figure className="svc-page-preview">
          <figcaption className="svc-text svc-tone-muted">
            The pending version, without the owner’s data (queries read as nothing here):
          </figcaption>
          <AppView key={`${item.appId}@${item.version}`} document={entry.document} />
        </figure>
      ) : (
        <p className="svc-text svc-tone-muted">No preview of this version could be loaded.</p>
      )}
      <div className="svc-row svc-align-start svc-justify-start" style={{ gap: 16 }}>
        <button
          type="button"
          className="svc-button svc-button-primary"
          disabled={busy}
          onClick={() => onApprove?.(entry)}
        >
          Approve version {item.version}
        </button>
        <form className="svc-page-reject" onSubmit={submit}>
          <label htmlFor={noteId}>Why reject it? (required)</label>
          <textarea
            id={noteId}
            required
            maxLength={2000}
            value={note}
            onChange={(event) => setNote(event.target.value)}
          />
          <button type="submit" className="svc-button svc-button-danger" disabled={busy}>
            Reject version {item.version}
          </button>
        </form>
      </div>
    </li>
  );
}
