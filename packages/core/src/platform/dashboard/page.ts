import type { Context } from 'hono';
import { type HtmlValue, html, type SafeHtml } from '../../http/html.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { displayName, readableText } from '../internal/display-name.js';
import type { SessionCaller } from '../internal/session.js';
import type { ApiAnswer, DashboardApi } from './api.js';
import type { NavKey, NoticeLink } from './layout.js';

/** What a page sees while it renders or acts: the request, its user, the API, its own URL. */
export interface PageView {
  c: Context<PlatformEnv>;
  ctx: PlatformContext;
  /** Null only on public pages, for a visitor who is not signed in. */
  user: SessionCaller | null;
  api: DashboardApi;
  /** The platform's path prefix (empty at the root), for links. */
  base: string;
  /** The route's parameters (`:id` ...). */
  params: Record<string, string>;
  /**
   * The fields of this page's form that an action just refused, so the page fills the form in
   * again with what was typed (never secrets); absent otherwise.
   */
  posted?: Record<string, string>;
  /** A form posting `action` back to this page, with the session's CSRF token and the workspace. */
  form(action: string, inner: SafeHtml, options?: FormOptions): SafeHtml;
}

export interface FormOptions {
  /** The submit button's text (default: none, the inner markup has its own). */
  submit?: string;
  /** A class for the submit button (`danger` for destructive actions). */
  buttonClass?: string;
  /** Ask the user to confirm before sending (the script shows it; without script the form sends). */
  confirm?: string;
  /** An accessible name for the form. */
  label?: string;
}

/** What an action did: where to go next, or the API's refusal to show on the page. */
export type ActionResult =
  | { redirect: string }
  | { done: true }
  /** `next`: a link the refusal offers, to where it can be put right (add credit on billing). */
  | { refused: ApiAnswer | string; status?: number; next?: NoticeLink }
  /** Something to show once above the page (a new key): answered at once, never put in a URL. */
  | { show: SafeHtml };

export interface PageAction {
  run(view: PageView, fields: Record<string, string>): Promise<ActionResult>;
  /** What the page says once the action is done (fixed text: never taken from the URL). */
  done: string;
}

export interface DashboardPage {
  /** Under the base path; `:name` segments are parameters. */
  path: string;
  nav: NavKey | null;
  /** Pages anyone may see (the public pricing page). */
  public?: boolean;
  title(view: PageView): string | Promise<string>;
  /** The page's body, or a status with a message when there is nothing to show (404 ...). */
  render(view: PageView): Promise<SafeHtml | { status: 404 | 403; message: string }>;
  actions?: Record<string, PageAction>;
}

/** An action that answers with the API's answer: done when it succeeded, refused when not. */
export function fromAnswer(answer: ApiAnswer): ActionResult {
  return answer.ok ? { done: true } : { refused: answer, status: answer.status };
}

/** The form's field `name` as text (empty when missing). */
export function field(fields: Record<string, string>, name: string): string {
  return fields[name] ?? '';
}

/** The longest name a form takes (`displayName`'s limit): its inputs carry it as `maxlength`. */
export const NAME_MAX = 100;

/**
 * Why the API would refuse `value` as a name, said in the form's words (`what`: "The workspace
 * name"), or null: checked before the call so the page never shows the API's field paths. `max`
 * is the API's limit for this name (a connection's takes 200), carried by its input as `maxlength`.
 */
export function nameRefusal(what: string, value: string, max: number = NAME_MAX): string | null {
  const rule = max === NAME_MAX ? displayName : readableText(max);
  return rule.safeParse(value).success
    ? null
    : `${what} must be 1 to ${max} characters, at least one of them visible, without control or text direction characters.`;
}

/** A definition list row, for the pages' detail blocks. */
export function detail(term: string, value: SafeHtml | string | number | null): SafeHtml {
  return html`<div><dt>${term}</dt><dd>${value ?? '—'}</dd></div>`;
}

/**
 * A data table with column headers and an accessible caption; `empty` when there are no rows.
 * Wrapped in a box that scrolls sideways, so a table wider than a phone's screen scrolls on its
 * own instead of widening the page and pushing its row actions off-screen; the box takes focus
 * so it scrolls from the keyboard too.
 */
export function table(
  caption: string,
  headers: readonly string[],
  rows: readonly HtmlValue[][],
  empty: string,
): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="table-scroll" role="region" aria-label="${caption}" tabindex="0"><table><caption class="visually-hidden">${caption}</caption><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((row) => html`<tr>${row.map((cell) => html`<td>${cell}</td>`)}</tr>`)}</tbody></table></div>`;
}

/** A labelled input (`for`/`id` paired), with an optional hint. */
export function input(
  id: string,
  label: string,
  attributes: {
    name: string;
    type?: string;
    value?: string | number | null;
    required?: boolean;
    hint?: string;
    min?: number;
    max?: number;
    step?: string;
    placeholder?: string;
    maxlength?: number;
  },
): SafeHtml {
  const a = attributes;
  return html`<label for="${id}">${label}${a.required ? ' (required)' : ''}</label>${a.hint ? html`<p class="field-hint" id="${id}-hint">${a.hint}</p>` : null}<input id="${id}" name="${a.name}" type="${a.type ?? 'text'}"${a.value !== undefined && a.value !== null ? html` value="${String(a.value)}"` : null}${a.required ? html` required` : null}${a.min !== undefined ? html` min="${a.min}"` : null}${a.max !== undefined ? html` max="${a.max}"` : null}${a.step ? html` step="${a.step}"` : null}${a.placeholder ? html` placeholder="${a.placeholder}"` : null}${a.maxlength ? html` maxlength="${a.maxlength}"` : null}${a.hint ? html` aria-describedby="${id}-hint"` : null}>`;
}
