/**
 * One thread's conversation over useChat, exactly as an AI SDK developer would wire it: the
 * thread id is the chat id, the stored messages seed it, `resume` picks up a turn still running
 * (after a reload), and approval answers are sent back automatically once every parked call of
 * the last step has one. A message the server never took (offline, refused) is taken back out of
 * the list and its text put back in the composer; one refused because a turn is already running
 * on the thread (another tab's) joins that turn instead. A reply whose connection drops midway is
 * handed to the loader to be joined again (`onCutOff`).
 */
import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import {
  type FormEvent,
  type KeyboardEvent,
  type ReactNode,
  useEffect,
  useMemo,
  useRef,
  useState,
} from 'react';
import { MessageView } from './message-view';
import { type ApprovalActions, MESSAGE_BOX_ID } from './tool-card';
import { approveAndRemember, errorCodeOf, loadThread, stopThread, wireErrorMessage } from './wire';

export interface ConversationProps {
  base: string;
  threadId: string;
  initialMessages: UIMessage[];
  /** Whether the thread exists on the server (a new chat has nothing to resume). */
  resume: boolean;
  /** Called when a turn starts or settles, so the thread list can follow. */
  onActivity(): void;
  /** Called when a reply's connection drops midway, for the thread to be loaded and joined again. */
  onCutOff(): void;
  /** Whether the thread is being loaded again after a reply was cut off. */
  reconnecting?: boolean;
}

export function Conversation({
  base,
  threadId,
  initialMessages,
  resume,
  onActivity,
  onCutOff,
  reconnecting = false,
}: ConversationProps) {
  const transport = useMemo(() => new DefaultChatTransport({ api: `${base}/chat` }), [base]);
  const chat = useChat({
    id: threadId,
    messages: initialMessages,
    resume,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  // Failures of the page's own wire calls (stop, always allow); turn errors are `chat.error`.
  const [callError, setCallError] = useState<string | null>(null);
  const busy = chat.status === 'submitted' || chat.status === 'streaming';
  const [draft, setDraft] = useState('');
  // The text of the message just sent, until the server starts answering it.
  const unanswered = useRef<string | null>(null);

  useEffect(() => {
    if (chat.status === 'streaming' || chat.status === 'ready') unanswered.current = null;
    if (chat.status !== 'submitted') onActivity();
  }, [chat.status, onActivity]);

  // A send that failed before any answer: the server did not take the message, so it leaves the
  // list and its text goes back to the composer. A turn already running on the thread (sent from
  // another tab) is joined: its stored messages load and its stream is resumed here.
  const { error: chatError, messages, setMessages, clearError, resumeStream } = chat;
  useEffect(() => {
    const text = unanswered.current;
    if (!chatError || text === null) return;
    unanswered.current = null;
    if (messages.at(-1)?.role !== 'user') return;
    setMessages(messages.slice(0, -1));
    setDraft((current) => (current === '' ? text : current));
    if (errorCodeOf(chatError) !== 'run_in_flight') return;
    clearError();
    loadThread(base, threadId).then(
      async (stored) => {
        if (stored) setMessages(stored);
        await resumeStream();
        setJoined(true);
      },
      (failure: unknown) => setCallError(wireErrorMessage(failure)),
    );
  }, [chatError, messages, setMessages, clearError, resumeStream, base, threadId]);

  // A reply cut off midway by the network: the turn runs on on the server (a dropped connection
  // is resumable by design), so rather than report a failure the page joins it again, as a reload
  // would: the loader fetches the thread anew and mounts a fresh conversation that resumes it.
  useEffect(() => {
    const cutOff =
      chatError instanceof TypeError && unanswered.current === null && messages.at(-1)?.role === 'assistant';
    if (!cutOff) return;
    clearError();
    onCutOff();
  }, [chatError, messages, clearError, onCutOff]);
  // A turn sent from another tab, or ended there, shows here once the person comes back to this
  // one (the tab shown again, the window focused): while this tab is idle the thread is read
  // again and, when it moved on, its stored messages replace the list and a turn still running
  // is joined (a stream that has ended answers 204, and nothing more happens).
  // One look at a time: a tab shown again fires both `visibilitychange` and `focus`, and two
  // joins of one turn would write its text twice.
  const looking = useRef(false);
  useEffect(() => {
    // A new chat this tab has sent nothing in is on no server yet.
    if (busy || reconnecting || (!resume && messages.length === 0)) return;
    let current = true;
    const follow = () => {
      if (document.visibilityState !== 'visible' || looking.current) return;
      looking.current = true;
      loadThread(base, threadId)
        .then(
          async (stored) => {
            if (!current || !stored || sameMessages(stored, messages)) return;
            setMessages(stored);
            await resumeStream();
          },
          // Nothing to show: the next return to the page looks again.
          () => undefined,
        )
        .finally(() => {
          looking.current = false;
        });
    };
    window.addEventListener('focus', follow);
    document.addEventListener('visibilitychange', follow);
    return () => {
      current = false;
      window.removeEventListener('focus', follow);
      document.removeEventListener('visibilitychange', follow);
    };
  }, [busy, reconnecting, resume, messages, setMessages, resumeStream, base, threadId]);
  // A joined turn paused for an approval stays in flight until the approval is answered.
  const [joined, setJoined] = useState(false);
  useEffect(() => {
    if (!joined) return;
    setJoined(false);
    if (awaitsApproval(messages.at(-1))) setCallError('Answer the approval request first, then send again.');
  }, [joined, messages]);
  // Leaving the thread drops its stream only: the turn runs on, and opening the thread again resumes it.
  const { stop: dropStream } = chat;
  useEffect(() => () => void dropStream(), [dropStream]);

  const actions: ApprovalActions = {
    approve: async (id) => {
      await chat.addToolApprovalResponse({ id, approved: true });
    },
    deny: async (id) => {
      await chat.addToolApprovalResponse({ id, approved: false });
    },
    alwaysAllow: async (id) => {
      try {
        await approveAndRemember(base, id);
      } catch (error) {
        setCallError(wireErrorMessage(error));
        throw error;
      }
      await chat.addToolApprovalResponse({ id, approved: true });
    },
  };

  const stop = async () => {
    setCallError(null);
    try {
      await stopThread(base, threadId);
    } catch (error) {
      setCallError(`The turn could not be stopped: ${wireErrorMessage(error)}`);
    }
    await chat.stop();
  };

  const send = (text: string) => {
    setCallError(null);
    unanswered.current = text;
    void chat.sendMessage({ text });
  };

  const last = chat.messages.at(-1);
  const error = callError ?? (chat.error ? turnErrorMessage(chat.error) : null);
  return (
    <div className="conversation">
      <MessageList>
        {chat.messages.map((message) => (
          <MessageView
            key={message.id}
            message={message}
            streaming={message === last && busy}
            actions={actions}
            base={base}
            footer={
              message === last && message.role === 'assistant' && !busy ? (
                <button type="button" className="regenerate" onClick={() => void chat.regenerate()}>
                  Regenerate
                </button>
              ) : null
            }
          />
        ))}
      </MessageList>
      {reconnecting && (
        <p className="reconnecting" role="status">
          The connection dropped. Reconnecting to the reply…
        </p>
      )}
      {error && (
        <div className="error" role="alert">
          <span>{error}</span>
          <button
            type="button"
            onClick={() => {
              setCallError(null);
              chat.clearError();
            }}
          >
            Dismiss
          </button>
        </div>
      )}
      <Composer busy={busy} text={draft} onChange={setDraft} onSend={send} onStop={() => void stop()} />
    </div>
  );
}

/** The message log, kept scrolled to the newest message while the reader is at the bottom. */
function MessageList({ children }: { children: ReactNode }) {
  const log = useRef<HTMLOListElement>(null);
  const atBottom = useRef(true);
  useEffect(() => {
    const element = log.current;
    if (element && atBottom.current) element.scrollTop = element.scrollHeight;
  });
  return (
    <ol
      ref={log}
      className="messages"
      aria-label="Messages"
      aria-live="polite"
      onScroll={(event) => {
        const element = event.currentTarget;
        atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
      }}
    >
      {children}
    </ol>
  );
}

/** Whether two lists hold the same messages, in order (the thread did not move on). */
function sameMessages(stored: UIMessage[], shown: UIMessage[]): boolean {
  return stored.length === shown.length && stored.every((message, index) => message.id === shown[index]!.id);
}

function awaitsApproval(message: UIMessage | undefined): boolean {
  return !!message?.parts.some((part) => isToolUIPart(part) && part.state === 'approval-requested');
}

/** A failed turn in words: a request that never reached the server says so, not "Failed to fetch". */
function turnErrorMessage(error: Error): string {
  if (error instanceof TypeError)
    return 'Could not reach the server. Check your connection, then send again.';
  return wireErrorMessage(error);
}

function Composer({
  busy,
  text,
  onChange: setText,
  onSend,
  onStop,
}: {
  busy: boolean;
  text: string;
  onChange(text: string): void;
  onSend(text: string): void;
  onStop(): void;
}) {
  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    if (busy || text.trim() === '') return;
    onSend(text.trim());
    setText('');
  };
  // Enter sends, Shift+Enter breaks the line, as in most chat apps.
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) submit(event);
  };
  return (
    <form className="composer" onSubmit={submit}>
      <label htmlFor={MESSAGE_BOX_ID} className="visually-hidden">
        Message
      </label>
      <textarea
        id={MESSAGE_BOX_ID}
        rows={2}
        dir="auto"
        value={text}
        placeholder="Send a message"
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      {busy ? (
        <button
          type="button"
          className="stop"
          onClick={() => {
            onStop();
            // Stop gives way to Send: the focus goes to the message box, not to the page.
            document.getElementById(MESSAGE_BOX_ID)?.focus();
          }}
        >
          Stop
        </button>
      ) : (
        <button type="submit" className="primary" disabled={text.trim() === ''}>
          Send
        </button>
      )}
    </form>
  );
}
