'use client';
/**
 * The chat page: sign in with the stand-in, then the shared chat UI over the wire (the AI SDK's
 * own `useChat`: threads, streaming, tool cards, approvals, stop, regenerate, resume).
 */
import { ChatApp } from '@service/example-chat-ui';
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
  return signedIn ? <ChatApp title="Next.js host" /> : <SignIn onSignedIn={() => setSignedIn(true)} />;
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
