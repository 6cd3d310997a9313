/**
 * The chat page: the thread list beside the open thread's conversation. The open thread is in
 * the URL (`?thread=<id>`), so a reload lands on it and resumes a turn still running, and the
 * browser's back button walks back through the threads opened.
 */
import type { UIMessage } from 'ai';
import { useCallback, useEffect, useRef, useState } from 'react';
import { Conversation } from './conversation';
import { PageHeader } from './page-header';
import { ThreadList } from './thread-list';
import { MESSAGE_BOX_ID } from './tool-card';
import { listThreads, loadThread, type ThreadSummary, wireErrorMessage } from './wire';

export interface ChatAppProps {
  /** Where the host mounts the wire. */
  base?: string;
  /** Who is signed in, shown in the header. */
  user?: string;
  /** Signs the user out; without it the page has no sign-out button. */
  onSignOut?: () => void;
  /** The page's heading. */
  title?: string;
  /** The host's other pages, linked from the header. */
  links?: ReadonlyArray<{ href: string; label: string }>;
}

export function ChatApp({ base = '/api/service', user, onSignOut, title = 'Chat', links }: ChatAppProps) {
  const [threadId, setThreadId] = useState(() => threadInUrl() ?? newThreadId());
  // The chat made in this page and open since: the server has nothing of it to load yet.
  const [freshId, setFreshId] = useState<string | null>(() => (threadInUrl() === null ? threadId : null));
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [listError, setListError] = useState<string | null>(null);

  const refreshThreads = useCallback(() => {
    listThreads(base).then(
      (list) => {
        setThreads(list);
        setListError(null);
      },
      (error: unknown) => setListError(wireErrorMessage(error)),
    );
  }, [base]);

  useEffect(() => {
    // The first visit gets a thread id of its own at once, so a reload comes back to it.
    if (threadInUrl() !== threadId) window.history.replaceState(null, '', urlOf(threadId));
    const onPopState = () => {
      setFreshId(null);
      setThreadId(threadInUrl() ?? newThreadId());
    };
    window.addEventListener('popstate', onPopState);
    return () => window.removeEventListener('popstate', onPopState);
  }, [threadId]);
  useEffect(refreshThreads, [refreshThreads]);
  // Threads started or renamed in another tab show once the person comes back to this one.
  useEffect(() => {
    const follow = () => document.visibilityState === 'visible' && refreshThreads();
    window.addEventListener('focus', follow);
    document.addEventListener('visibilitychange', follow);
    return () => {
      window.removeEventListener('focus', follow);
      document.removeEventListener('visibilitychange', follow);
    };
  }, [refreshThreads]);

  const open = (id: string, fresh = false) => {
    if (id === threadId) return;
    window.history.pushState(null, '', urlOf(id));
    setFreshId(fresh ? id : null);
    setThreadId(id);
  };

  return (
    <div className="chat-app">
      <PageHeader
        title={title}
        links={links}
        user={user}
        onSignOut={onSignOut}
        skipTo={{ id: MESSAGE_BOX_ID, label: 'Skip to the message box' }}
      />
      <ThreadList
        threads={threads}
        error={listError}
        selectedId={threadId}
        onSelect={open}
        onNew={() => open(newThreadId(), true)}
      />
      <main className="thread-view">
        <ThreadLoader
          key={threadId}
          base={base}
          threadId={threadId}
          fresh={threadId === freshId}
          onActivity={refreshThreads}
        />
      </main>
    </div>
  );
}

/**
 * Loads a thread's stored messages, then mounts its conversation. A new chat starts empty: one
 * made in this page (`fresh`) is not asked for, one the server does not know answers 404. When a
 * reply's connection drops midway, the thread is loaded again (retrying, backing off, sooner once
 * the browser is back online) while the conversation stays on screen, then a fresh conversation
 * is mounted over it and resumes the turn, as after a reload.
 */
function ThreadLoader({
  base,
  threadId,
  fresh,
  onActivity,
}: {
  base: string;
  threadId: string;
  fresh: boolean;
  onActivity(): void;
}) {
  const [loaded, setLoaded] = useState<{ messages: UIMessage[]; exists: boolean } | null>(
    fresh ? { messages: [], exists: false } : null,
  );
  const [error, setError] = useState<string | null>(null);
  const skip = useRef(fresh);
  useEffect(() => {
    if (skip.current) return;
    let current = true;
    loadThread(base, threadId).then(
      (messages) => current && setLoaded({ messages: messages ?? [], exists: messages !== null }),
      (failure: unknown) => current && setError(wireErrorMessage(failure)),
    );
    return () => {
      current = false;
    };
  }, [base, threadId]);

  const [reconnecting, setReconnecting] = useState(false);
  // Bumped to mount a fresh conversation once the thread is loaded again.
  const [generation, setGeneration] = useState(0);
  const onCutOff = useCallback(() => setReconnecting(true), []);
  useEffect(() => {
    if (!reconnecting) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let failures = 0;
    let current = true;
    const attempt = () => {
      clearTimeout(timer);
      loadThread(base, threadId).then(
        (messages) => {
          if (!current) return;
          setLoaded({ messages: messages ?? [], exists: messages !== null });
          setGeneration((value) => value + 1);
          setReconnecting(false);
        },
        () => {
          if (current) timer = setTimeout(attempt, Math.min(10_000, 500 * 2 ** failures++));
        },
      );
    };
    timer = setTimeout(attempt, 250);
    window.addEventListener('online', attempt);
    return () => {
      current = false;
      clearTimeout(timer);
      window.removeEventListener('online', attempt);
    };
  }, [reconnecting, base, threadId]);

  if (error) {
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  }
  if (!loaded) return <p className="loading">Loading…</p>;
  return (
    <Conversation
      key={generation}
      base={base}
      threadId={threadId}
      initialMessages={loaded.messages}
      resume={loaded.exists}
      onActivity={onActivity}
      onCutOff={onCutOff}
      reconnecting={reconnecting}
    />
  );
}

/** The wire's thread id rule: letters, digits, `_` and `-`, at most 64. */
const THREAD_ID = /^[A-Za-z0-9_-]{1,64}$/;

function threadInUrl(): string | null {
  const id = new URL(window.location.href).searchParams.get('thread');
  return id && THREAD_ID.test(id) ? id : null;
}

function urlOf(threadId: string): string {
  const url = new URL(window.location.href);
  url.searchParams.set('thread', threadId);
  return url.pathname + url.search;
}

/** A fresh thread id (random bytes work on plain-HTTP origins too, unlike `randomUUID`). */
function newThreadId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `chat_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
