/**
 * `@service/react`: React components for the service wire.
 *
 * - `<AppView>` renders an app document with the Kit (bindings resolved from query results and
 *   local state, charts as inline SVG with a table for screen readers).
 * - `<AppPart>` renders the app the agent builds as the chat shows it (the `data-service-app`
 *   part): building, finished, or failed in words.
 * - `<ServiceProvider>` says where the wire is mounted; `<ServiceSlot>` shows the person's placed
 *   app in a named place on a host page, or the host's own children.
 * - `<Remixable>` marks a host component the person may remix, and shows their remix of it in place.
 * - `<AppsPage>` lists the person's apps to open, fork, export, import and delete them.
 * - `<ReviewQueue>` lets reviewers approve or reject review remixes.
 *
 * Styles: `import '@service/react/styles.css'` (class names all start with `svc-`).
 */

export { type ActionRunner, type AppAction, actionOf, runAction, type WrittenAction } from './actions.js';
export {
  APP_PART_TYPE,
  type AppChatPart,
  AppPart,
  type AppPartProps,
  type AppPartView,
  appPartView,
  type ChatPartLike,
  isAppPart,
  STOPPED_BUILD_REASON,
} from './app-part.js';
export { AppView, type AppViewProps } from './app-view.js';
export {
  type AppDetail,
  type AppKind,
  type AppSummary,
  type AppVersionInfo,
  type AppVersionReview,
  appHistory,
  approveReview,
  deleteApp,
  exportApp,
  findRemix,
  forkApp,
  getApp,
  importApp,
  listApps,
  type ReviewItem,
  rebaseRemix,
  rejectReview,
  reviewItem,
  reviewQueue,
  seedRemix,
} from './apps-client.js';
export {
  AppsPage,
  type AppsPageHandlers,
  type AppsPageProps,
  AppsPageView,
  type AppsPageViewProps,
} from './apps-page.js';
export {
  type ActionOutcome,
  type AppsListState,
  deleteAppNamed,
  forkAppNamed,
  importAppFile,
  loadAppsList,
  type OpenedAppState,
  openAppDetail,
} from './apps-page-state.js';
export type { AppDocument, AppNode } from './document.js';
export { formatMoney, type MoneyUnit } from './format.js';
export { DEFAULT_BASE_URL, ServiceProvider, type ServiceProviderProps } from './provider.js';
export {
  loadRemix,
  type RemixNote,
  type RemixShown,
  type RemixState,
  remixComponent,
  revertRemix,
  updateRemix,
} from './remix-state.js';
export {
  REVERT_QUESTION,
  Remixable,
  type RemixableProps,
  RemixableView,
  type RemixableViewProps,
  type RemixControls,
  type RemixInfo,
} from './remixable.js';
export {
  ReviewQueue,
  type ReviewQueueProps,
  ReviewQueueView,
  type ReviewQueueViewProps,
} from './review-queue.js';
export {
  type DecisionOutcome,
  decideReview,
  loadReviewQueue,
  NOTE_REQUIRED,
  type ReviewEntry,
  type ReviewQueueState,
} from './review-state.js';
export { ServiceSlot, type ServiceSlotProps, SlotView, type SlotViewProps } from './service-slot.js';
export {
  BUILDING_POLL_MS,
  clearSlot,
  loadSlot,
  pressInSlot,
  type SlotClient,
  type SlotContent,
  type SlotRequest,
  type SlotState,
} from './slot-state.js';
export { type PlacedApp, WireCallError, type WireClient } from './wire.js';
