/**
 * The demo host's apps: the slot its orders page offers, the host components on that page a
 * person may remix, each with the app document their remix starts from (the Kit equivalent of the
 * component as the page draws it: keep the two in step, and keep each `component` key when the
 * component changes, since it names the remix's baseline), who reviews review remixes, and where
 * a person opens one of their apps (the apps page, which the MCP door's app-open card links).
 *
 * @see docs/apps.md
 */
import type { AppSeed, AppsOptions, DeclaredSlot, Principal } from '@service/core/wire';

/** The orders page's path. */
export const ORDERS_PAGE = '/orders';
/** The person's apps (`<AppsPage>`); `?app=<id>` opens one. */
export const APPS_PAGE = '/apps';
/** The review queue (`<ReviewQueue>`), for reviewers. */
export const REVIEW_PAGE = '/review';

/**
 * Who reviews when `HOST_REVIEWERS` is unset: the demo's reviewer account, which anyone may sign
 * in as (the sign-in stand-in has no passwords), so the review queue can be tried in a browser.
 */
export const DEMO_REVIEWER = 'reviewer@example.com';

/** The reviewers' email addresses: `HOST_REVIEWERS` (comma-separated), else the demo reviewer. */
export function reviewersFrom(env: Record<string, string | undefined>): string[] {
  const listed = (env.HOST_REVIEWERS ?? '')
    .split(',')
    .map((email) => email.trim().toLowerCase())
    .filter(Boolean);
  return listed.length > 0 ? listed : [DEMO_REVIEWER];
}

/** The reviewer rule: a signed-in user whose email is on the list. */
export function isReviewer(reviewers: readonly string[], user: Principal | null): boolean {
  return typeof user?.email === 'string' && reviewers.includes(user.email.toLowerCase());
}

/** The place beside the orders where a person may pin one of their apps. */
export const ORDERS_SIDE_SLOT: DeclaredSlot = {
  id: 'orders.side',
  page: ORDERS_PAGE,
  label: 'Beside my orders',
};

/** `<Remixable id="orders-summary">` on the orders page: how many orders the person has. */
export const ORDERS_SUMMARY_SEED: AppSeed = {
  component: 'orders-summary',
  name: 'Orders summary',
  document: {
    version: 1,
    title: 'Orders summary',
    queries: { orders: { tool: 'list_orders' } },
    root: {
      component: 'Card',
      props: { title: 'Summary' },
      children: [
        { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
      ],
    },
  },
};

/** `<Remixable id="orders-header">` on the orders page: its heading; a remix of it is reviewed first. */
export const ORDERS_HEADER_SEED: AppSeed = {
  component: 'orders-header',
  name: 'Orders header',
  review: true,
  document: {
    version: 1,
    title: 'Orders header',
    root: {
      component: 'Stack',
      props: { gap: 4 },
      children: [
        { component: 'Heading', props: { text: 'Your orders', level: 1 } },
        { component: 'Text', props: { text: 'Everything you ordered from the shop.', tone: 'muted' } },
      ],
    },
  },
};

/** The components' seeds as this version of the host ships them. */
export const DEMO_SEEDS: AppSeed[] = [ORDERS_SUMMARY_SEED, ORDERS_HEADER_SEED];

export interface DemoAppsOptions {
  /** The host's public URL (no trailing slash): apps open at `{baseUrl}/apps?app=<id>`. */
  baseUrl: string;
  /** The reviewers' email addresses (`reviewersFrom`). */
  reviewers: readonly string[];
  /** Default `DEMO_SEEDS`. */
  seeds?: AppSeed[];
  /**
   * The source hashes `service sync` captured for the `<Remixable>` wrappers (`remixableHashes`):
   * each seed takes its component's, so a changed component, synced, drifts people's remixes.
   */
  sourceHashes?: Record<string, string>;
}

/** What the demo host passes as `createService({ apps })`. */
export function demoApps(options: DemoAppsOptions): AppsOptions {
  return {
    slots: [ORDERS_SIDE_SLOT],
    seeds: (options.seeds ?? DEMO_SEEDS).map((seed) => {
      const sourceHash = options.sourceHashes?.[seed.component];
      return sourceHash ? { ...seed, sourceHash } : seed;
    }),
    reviewer: (user) => isReviewer(options.reviewers, user),
    openUrl: (appId) => `${options.baseUrl}${APPS_PAGE}?app=${encodeURIComponent(appId)}`,
  };
}
