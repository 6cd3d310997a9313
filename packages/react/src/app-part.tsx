/**
 * `<AppPart>`: the app the agent builds, as the chat shows it. `service_make` streams the app as
 * one AI SDK data part (`data-service-app`, one id per app) that moves from `streaming` to `final`
 * or `failed` (or `withdrawn`, a guessed preview that shows nothing); this renders whichever
 * state the part is in. A part still `streaming` once its
 * message stopped streaming is a build that died on the way: it reads as failed, so a turn that
 * ended never leaves a spinner behind.
 */
import type { AppAction } from './actions.js';
import { AppView } from './app-view.js';
import { isRecord } from './bindings.js';
import type { AppDocument } from './document.js';

/** The data part's type, as the wire writes it into the turn's stream. */
export const APP_PART_TYPE = 'data-service-app';

/** What a build that stopped before its end says. */
export const STOPPED_BUILD_REASON = 'the build stopped before it finished';

/** A chat message part, as the AI SDK hands it over (`message.parts[i]`). */
export interface ChatPartLike {
  type: string;
  id?: string;
  data?: unknown;
}

/** A `data-service-app` part; its `data` is read defensively, as anything from the network. */
export interface AppChatPart extends ChatPartLike {
  type: typeof APP_PART_TYPE;
}

/** What the part shows, decided from its data and whether its message is still streaming. */
export type AppPartView =
  | { state: 'building'; appId: string; title: string | null; document: AppDocument | null }
  | { state: 'ready'; appId: string; title: string | null; version: number | null; document: AppDocument }
  | { state: 'failed'; appId: string; title: string | null; reason: string }
  /** A preview the build withdrew (it guessed a new app; the call edited one): nothing shows. */
  | { state: 'withdrawn'; appId: string };

export function isAppPart(part: ChatPartLike): part is AppChatPart {
  return part.type === APP_PART_TYPE;
}

/** Reads a part's data into what it shows; never throws, whatever the data holds. */
export function appPartView(part: ChatPartLike, messageStreaming: boolean): AppPartView {
  const data = isRecord(part.data) ? part.data : {};
  const appId = text(data.appId) ?? text(part.id) ?? '';
  const title = text(data.title);
  const document = isDocument(data.document) ? (data.document as unknown as AppDocument) : null;
  switch (data.state) {
    case 'streaming':
      return messageStreaming
        ? { state: 'building', appId, title, document }
        : { state: 'failed', appId, title, reason: STOPPED_BUILD_REASON };
    case 'final':
      if (!document) return { state: 'failed', appId, title, reason: 'the app arrived without its screen' };
      return {
        state: 'ready',
        appId,
        title: title ?? text(document.title),
        version: typeof data.version === 'number' ? data.version : null,
        document,
      };
    case 'failed':
      return { state: 'failed', appId, title, reason: text(data.reason) ?? 'no reason was given' };
    case 'withdrawn':
      return { state: 'withdrawn', appId };
    default:
      return { state: 'failed', appId, title, reason: 'the app could not be read' };
  }
}

export interface AppPartProps {
  /** The message part: `{ type: 'data-service-app', id, data }`. */
  part: ChatPartLike;
  /** Whether the message holding the part is still streaming (its turn runs on). */
  messageStreaming: boolean;
  /** Called for each action a button of the finished app runs (see `<AppView>`). */
  onAction?: (action: AppAction) => void | Promise<void>;
  /** The locale numbers, money and dates are written in. */
  locale?: string;
}

export function AppPart({ part, messageStreaming, onAction, locale }: AppPartProps) {
  const view = appPartView(part, messageStreaming);
  if (view.state === 'withdrawn') return null;
  const name = view.title ?? 'The app';
  switch (view.state) {
    case 'building':
      return (
        <div className="svc-app-part svc-app-part-building" data-service-app={view.appId} aria-busy="true">
          <p className="svc-app-part-status" role="status">
            {view.title ? `Building ${view.title}…` : 'Building…'}
          </p>
          {/* The partial tree is not saved yet: no actions run from it. */}
          {view.document && <AppView document={view.document} locale={locale} />}
        </div>
      );
    case 'ready':
      return (
        <div className="svc-app-part" data-service-app={view.appId}>
          <AppView
            key={`${view.appId}@${view.version}`}
            document={view.document}
            onAction={onAction}
            locale={locale}
          />
        </div>
      );
    case 'failed':
      return (
        <div className="svc-app-part svc-app-part-failed" data-service-app={view.appId}>
          <p className="svc-app-part-status">
            {name} could not be built: {view.reason}
          </p>
        </div>
      );
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** A document worth handing to `<AppView>` (which reads the rest of it defensively). */
function isDocument(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && isRecord(value.root);
}
