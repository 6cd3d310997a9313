/**
 * The demo host's apps: the slot its orders page offers, and the host components on that page a
 * person may remix, each with the app document their remix starts from (the Kit equivalent of the
 * component as the page draws it: keep the two in step, and keep each `component` key when the
 * component changes, since it names the remix's baseline).
 *
 * @see docs/apps.md
 */
import type { AppSeed, AppsOptions, DeclaredSlot } from '@service/core/wire';

/** The orders page's path. */
export const ORDERS_PAGE = '/orders';

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

/** What the demo host passes as `createService({ apps })`. */
export const demoApps: AppsOptions = {
  slots: [ORDERS_SIDE_SLOT],
  seeds: [ORDERS_SUMMARY_SEED, ORDERS_HEADER_SEED],
};
