'use client';
/**
 * A minimal chat over the wire with the AI SDK's own `useChat`: sign in with the stand-in, then
 * send, watch the answer stream, stop it, approve or deny a call that asks.
 */
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { type FormEvent, useEffect, useState } from 'react';

export default function Page() {
  const [signedIn, setSignedIn] = useState<boolean | null>(null);
  useEffect(() => {
    // The session cookie is HttpOnly: ask the wire whether it knows who we are.
    fetch('/api/service/threads?limit=1').then(
      (response) => setSignedIn(response.ok),
      () => setSignedIn(false),
    );
  }, []);
  if (signedIn === null) return <p>Loading…</p>;
  return signedIn ? <Chat /> : <SignIn onSignedIn={() => setSignedIn(true)} />;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const response = await fetch('/api/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email }),
    });
    if (response.ok) onSignedIn();
    else setProblem(((await response.json()) as { message?: string }).message ?? 'Sign-in failed');
  };
  return (
    <form onSubmit={submit}>
      <h1>Sign in</h1>
      <input
        type="email"
        aria-label="Email"
        placeholder="you@example.com"
        value={email}
        onChange={(event) => setEmail(event.target.value)}
        required
      />
      <button type="submit">Sign in</button>
      {problem && <p role="alert">{problem}</p>}
    </form>
  );
}

const transport = new DefaultChatTransport({ api: '/api/service/chat' });

function Chat() {
  const [input, setInput] = useState('');
  const { messages, sendMessage, status, stop, error } = useChat({ transport });
  const busy = status === 'submitted' || status === 'streaming';

  // Closing the stream alone leaves the turn running on the server (it waits to be resumed):
  // stop the run itself, then stop reading.
  const stopTurn = () => {
    const runId = (messages.at(-1)?.metadata as { runId?: string } | undefined)?.runId;
    if (runId) {
      void fetch(`/api/service/runs/${runId}/stop`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
    }
    void stop();
  };

  const send = (event: FormEvent) => {
    event.preventDefault();
    if (!input.trim()) return;
    void sendMessage({ text: input });
    setInput('');
  };

  return (
    <main>
      {messages.map((message) => (
        <Message key={message.id} message={message} />
      ))}
      {error && <p role="alert">{error.message}</p>}
      <form onSubmit={send}>
        <input aria-label="Message" value={input} onChange={(event) => setInput(event.target.value)} />
        {busy ? (
          <button type="button" onClick={stopTurn}>
            Stop
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </main>
  );
}

interface ToolCallPart {
  type: string;
  toolName?: string;
  toolCallId: string;
  state: string;
  approval?: { id: string };
}

function Message({ message }: { message: UIMessage }) {
  const text = message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  const calls = message.parts.filter(
    (part) => part.type === 'dynamic-tool' || part.type.startsWith('tool-'),
  ) as ToolCallPart[];
  return (
    <div data-role={message.role}>
      <b>{message.role === 'user' ? 'You' : 'Assistant'}:</b> {text}
      {calls.map((call) => (
        <div key={call.toolCallId}>
          <code>
            {call.toolName ?? call.type.slice('tool-'.length)}: {call.state}
          </code>
          {call.state === 'approval-requested' && call.approval && <Decide approvalId={call.approval.id} />}
        </div>
      ))}
    </div>
  );
}

/** Decisions go through the approvals API; the parked stream then carries on by itself. */
function Decide({ approvalId }: { approvalId: string }) {
  const [sent, setSent] = useState(false);
  const decide = (decision: 'approve' | 'deny') => {
    setSent(true);
    void fetch(`/api/service/approvals/${approvalId}/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision }),
    });
  };
  return (
    <span>
      {' '}
      <button type="button" disabled={sent} onClick={() => decide('approve')}>
        Approve
      </button>{' '}
      <button type="button" disabled={sent} onClick={() => decide('deny')}>
        Deny
      </button>
    </span>
  );
}
