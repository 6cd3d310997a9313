/**
 * The few wire calls the page makes itself; turns go through useChat's transport. Every call
 * fails with an Error whose message is the wire's own (`{ error: { code, message } }`), so the
 * page can show it as it is.
 */
import type { UIMessage } from 'ai';

export interface ThreadSummary {
  id: string;
  title: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The user's threads, newest first (the wire's first page). */
export async function listThreads(base: string): Promise<ThreadSummary[]> {
  const answer = await call(`${base}/threads`);
  return ((await answer.json()) as { threads: ThreadSummary[] }).threads;
}

/** A thread's stored messages, or null when there is no such thread yet (a new chat). */
export async function loadThread(base: string, threadId: string): Promise<UIMessage[] | null> {
  const answer = await call(`${base}/threads/${encodeURIComponent(threadId)}`, {}, [404]);
  if (answer.status === 404) return null;
  return ((await answer.json()) as { thread: { messages: UIMessage[] } }).thread.messages;
}

/**
 * Asks the server to stop the thread's turn. Aborting the request alone would not: a dropped
 * connection is resumable by design, so the turn would run on.
 */
export async function stopThread(base: string, threadId: string): Promise<void> {
  await call(`${base}/threads/${encodeURIComponent(threadId)}/stop`, postJson({}));
}

/** Approves a parked call and remembers it as a grant, so later calls of that tool run unasked. */
export async function approveAndRemember(base: string, approvalId: string): Promise<void> {
  await call(
    `${base}/approvals/${encodeURIComponent(approvalId)}/decide`,
    postJson({ decision: 'approve', remember: true }),
  );
}

/** Each query's result of one of the person's apps, run once as them (`POST /apps/:id/open`). */
export async function openAppQueries(base: string, appId: string): Promise<Record<string, unknown>> {
  const answer = await call(`${base}/apps/${encodeURIComponent(appId)}/open`, postJson({}));
  return ((await answer.json()) as { queries?: Record<string, unknown> }).queries ?? {};
}

/**
 * What to show for a failed request: the wire's `error.message` when the text is its JSON error
 * body (useChat's transport puts the response text in `error.message`), else the text itself.
 */
export function wireErrorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string' && message !== '') return message;
  } catch {
    // Not JSON: a network failure or a host's own text.
  }
  return text || 'Something went wrong.';
}

/** The wire's `error.code` when the failure's text is its JSON error body. */
export function errorCodeOf(error: unknown): string | undefined {
  const text = error instanceof Error ? error.message : String(error);
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

function postJson(body: unknown): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/** `fetch` that throws the answer's text unless it is OK (or one of the statuses `expected`). */
async function call(url: string, init: RequestInit = {}, expected: number[] = []): Promise<Response> {
  const answer = await fetch(url, { credentials: 'same-origin', ...init });
  if (!answer.ok && !expected.includes(answer.status)) {
    throw new Error((await answer.text()) || `${answer.status} ${answer.statusText}`);
  }
  return answer;
}
