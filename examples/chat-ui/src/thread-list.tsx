/** The signed-in user's threads, newest first, with "New chat" on top. */
import type { ThreadSummary } from './wire';

export interface ThreadListProps {
  threads: ThreadSummary[];
  /** Why the list could not be loaded, if it could not. */
  error: string | null;
  selectedId: string;
  onSelect(threadId: string): void;
  onNew(): void;
}

export function ThreadList({ threads, error, selectedId, onSelect, onNew }: ThreadListProps) {
  return (
    <nav className="thread-list" aria-label="Threads">
      <button type="button" className="new-chat" onClick={onNew}>
        New chat
      </button>
      {error && (
        <p className="thread-list-error" role="status">
          Could not load the chats: {error}
        </p>
      )}
      {threads.length === 0 ? (
        <p className="thread-list-empty">No chats yet.</p>
      ) : (
        <ul>
          {threads.map((thread) => (
            <li key={thread.id}>
              <button
                type="button"
                className="thread"
                aria-current={thread.id === selectedId ? 'page' : undefined}
                onClick={() => onSelect(thread.id)}
              >
                <span className="thread-title" dir="auto">
                  {thread.title ?? 'Untitled chat'}
                </span>
                <time dateTime={thread.updatedAt}>{new Date(thread.updatedAt).toLocaleString()}</time>
              </button>
            </li>
          ))}
        </ul>
      )}
    </nav>
  );
}
