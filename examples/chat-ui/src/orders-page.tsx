/**
 * The orders page: the person's orders as the host itself draws them, from the host's own API
 * (not the service wire), with a slot beside them where the person may pin one of their apps
 * (`orders.side`), and host components a person may remix (`<Remixable>`): the page's heading
 * (`orders-header`) and its summary (`orders-summary`). The host keeps a Kit document of each
 * component as its remix's starting point.
 */
import { Remixable, ServiceProvider, ServiceSlot } from '@service/react';
import { useEffect, useState } from 'react';
import { PageHeader, type PageLink } from './page-header';

export interface Order {
  id: string;
  item: string;
  status: 'open' | 'cancelled';
  note: string | null;
}

export interface OrdersPageProps {
  /** Where the host mounts the wire. */
  base?: string;
  /** The host's own API answering `{ count, orders }` for the signed-in person. */
  ordersUrl: string;
  /** The host's other pages (the chat, the apps), linked from the header. */
  links?: ReadonlyArray<PageLink>;
  user?: string;
  onSignOut?: () => void;
  title?: string;
}

/** The slot beside the orders, as the host declares it. */
export const ORDERS_SLOT = { id: 'orders.side', label: 'Beside my orders' } as const;

export function OrdersPage({
  base = '/api/service',
  ordersUrl,
  links,
  user,
  onSignOut,
  title = 'Orders',
}: OrdersPageProps) {
  const [orders, setOrders] = useState<Order[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    fetch(ordersUrl, { credentials: 'same-origin' })
      .then(async (answer) => {
        if (!answer.ok) throw new Error(`The orders could not be loaded (${answer.status}).`);
        return ((await answer.json()) as { orders: Order[] }).orders;
      })
      .then(
        (list) => current && setOrders(list),
        (failure: unknown) =>
          current && setError(failure instanceof Error ? failure.message : String(failure)),
      );
    return () => {
      current = false;
    };
  }, [ordersUrl]);

  return (
    <ServiceProvider baseUrl={base}>
      <div className="orders-app">
        <PageHeader title={title} links={links} user={user} onSignOut={onSignOut} />
        <main className="orders-main">
          <Remixable id="orders-header">
            <OrdersHeader />
          </Remixable>
          <Remixable id="orders-summary">
            <OrdersSummary count={orders?.length ?? null} />
          </Remixable>
          {error ? (
            <p className="error" role="alert">
              {error}
            </p>
          ) : orders ? (
            <OrdersTable orders={orders} />
          ) : (
            <p className="loading">Loading…</p>
          )}
        </main>
        <aside className="orders-side" aria-label={ORDERS_SLOT.label}>
          <ServiceSlot id={ORDERS_SLOT.id} label={ORDERS_SLOT.label}>
            <p className="orders-side-empty">
              Your own screen can go here. In the chat, ask for “a screen of my orders”, then “put it on my
              orders page”.
            </p>
          </ServiceSlot>
        </aside>
      </div>
    </ServiceProvider>
  );
}

/** The page's heading (its remix starts from the host's `orders-header` seed). */
function OrdersHeader() {
  return (
    <div className="orders-header">
      <h2>Your orders</h2>
      <p className="muted">Everything you ordered from the shop.</p>
    </div>
  );
}

/** How many orders there are (its remix starts from the host's `orders-summary` seed). */
function OrdersSummary({ count }: { count: number | null }) {
  return (
    <section className="orders-summary" aria-label="Summary">
      <h3>Summary</h3>
      <p>
        <span className="muted">Orders</span> <strong>{count ?? '…'}</strong>
      </p>
    </section>
  );
}

function OrdersTable({ orders }: { orders: Order[] }) {
  if (orders.length === 0) return <p className="muted">No orders yet.</p>;
  return (
    <table className="orders-table" aria-label="Orders">
      <thead>
        <tr>
          <th scope="col">Order</th>
          <th scope="col">Item</th>
          <th scope="col">Status</th>
          <th scope="col">Note</th>
        </tr>
      </thead>
      <tbody>
        {orders.map((order) => (
          <tr key={order.id}>
            <td>{order.id}</td>
            <td>{order.item}</td>
            <td>{order.status}</td>
            <td>{order.note ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
