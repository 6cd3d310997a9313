/**
 * The few wire calls the slot makes: plain `fetch` on the host's own origin (`credentials:
 * 'same-origin'`, so the host's session cookie signs the person in) with JSON bodies. A refused
 * call throws a `WireCallError` carrying the wire's own `{ error: { code, message } }`.
 */
import type { AppDocument } from './document.js';

export interface WireClient {
  /** Where the host mounted the wire, `/api/service` by default. */
  baseUrl: string;
  fetch: typeof fetch;
}

export class WireCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
    /** The error object's other fields (`problems` of an import, the counts of a failed rebase). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'WireCallError';
  }
}

/** A placed app as the slot shows it: the version the wire serves, with its queries run. */
export interface PlacedApp {
  id: string;
  name: string;
  kind: string;
  /** The served version's number (for a review app, the approved one). */
  version: number;
  document: AppDocument;
  /** Each query's result by name, run as the signed-in person when the app was opened. */
  queries: Record<string, unknown>;
  /** The queries that could not run, in words; their bindings read as nothing. */
  problems: { path: string; message: string }[];
}

/** The wire's answer to one call: `body` as JSON, or `rawBody` sent as it is (an imported file's text). */
export async function call<T>(
  client: WireClient,
  path: string,
  init: { method?: string; body?: unknown; rawBody?: string } = {},
): Promise<T> {
  const text = await callText(client, path, init);
  try {
    return (text ? JSON.parse(text) : null) as T;
  } catch {
    throw new WireCallError('The service answered something that is not JSON.', 200, null);
  }
}

/** The wire's answer as text (an export file, kept byte for byte); a refusal throws `WireCallError`. */
export async function callText(
  client: WireClient,
  path: string,
  init: { method?: string; body?: unknown; rawBody?: string } = {},
): Promise<string> {
  const method = init.method ?? 'GET';
  const payload = init.rawBody ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined);
  const answer = await client.fetch(`${client.baseUrl.replace(/\/+$/, '')}${path}`, {
    method,
    credentials: 'same-origin',
    headers: {
      accept: 'application/json',
      // The wire asks every write to say JSON, even a DELETE without a body (a cross-site form cannot).
      ...(payload !== undefined || method !== 'GET' ? { 'content-type': 'application/json' } : {}),
    },
    ...(payload !== undefined ? { body: payload } : {}),
  });
  const text = await answer.text();
  if (answer.ok) return text;
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: a proxy's or host's own error page; its status still says what happened.
  }
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const message =
    typeof error?.message === 'string' && error.message
      ? error.message
      : `The service answered ${answer.status}.`;
  const {
    code,
    message: _message,
    ...details
  } = (error && typeof error === 'object' ? error : {}) as Record<string, unknown>;
  throw new WireCallError(message, answer.status, typeof code === 'string' ? code : null, details);
}

/** Tells the wire this page shows the slot (`POST /slots`), so the person can place an app in it. */
export async function reportSlot(
  client: WireClient,
  page: string,
  slot: { id: string; label: string },
): Promise<void> {
  await call(client, '/slots', { method: 'POST', body: { page, slots: [slot] } });
}

/** The id of the app the person placed in `slot` on `page`, or null. */
/** What the person has in one slot: the app placed there, and a build the agent runs into it. */
export interface SlotPlacement {
  appId: string | null;
  /** A build targeting the slot, while it runs; null when none does (or the wire does not say). */
  building: { appId: string; since: string } | null;
}

export async function slotPlacement(client: WireClient, page: string, slot: string): Promise<SlotPlacement> {
  const answer = await call<{
    placements: { slot: string; appId: string }[];
    building?: { slot: string; appId: string; since: string }[];
  }>(client, `/apps/placements?page=${encodeURIComponent(page)}`);
  const build = (Array.isArray(answer.building) ? answer.building : []).find((b) => b.slot === slot);
  return {
    appId: answer.placements.find((placement) => placement.slot === slot)?.appId ?? null,
    building: build ? { appId: build.appId, since: build.since } : null,
  };
}

/**
 * Opens the person's app (`POST /apps/:id/open`): the version it serves with its queries' results.
 * Null when nothing of the app serves yet (a review remix nobody approved: the host's original).
 */
export async function openApp(client: WireClient, id: string): Promise<PlacedApp | null> {
  const opened = await call<{
    app: { id: string; name: string; kind: string };
    document: AppDocument | null;
    version: number | null;
    queries: Record<string, unknown>;
    problems: { path: string; message: string }[];
  }>(client, `/apps/${encodeURIComponent(id)}/open`, { method: 'POST', body: {} });
  if (opened.document === null || opened.version === null) return null;
  return {
    id: opened.app.id,
    name: opened.app.name,
    kind: opened.app.kind,
    version: opened.version,
    document: opened.document,
    queries: opened.queries,
    problems: opened.problems,
  };
}

/**
 * Presses one of the person's app's buttons (`POST /apps/:id/call`): the wire runs the host tool
 * only if a button of the served app makes that call. Answers the tool's output.
 */
export async function callApp(
  client: WireClient,
  id: string,
  press: { tool: string; input: Record<string, unknown> },
): Promise<unknown> {
  const answer = await call<{ output: unknown }>(client, `/apps/${encodeURIComponent(id)}/call`, {
    method: 'POST',
    body: press,
  });
  return answer.output;
}

/** Empties the person's slot (`DELETE /apps/placements`); the app itself stays. */
export async function unplace(client: WireClient, slot: string): Promise<void> {
  await call(client, '/apps/placements', { method: 'DELETE', body: { slot } });
}
