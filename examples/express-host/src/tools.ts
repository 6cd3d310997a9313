/**
 * The demo host's own tools: a tiny order book per user. Each tool gets the signed-in
 * principal, so a user only ever sees and changes their own orders.
 */
import { type AnyHostTool, defineTool } from '@service/core/wire';
import { z } from 'zod';

interface Order {
  id: string;
  item: string;
  status: 'open' | 'cancelled';
  note: string | null;
}

/**
 * Demo data, kept in memory for each user of one host (a real host reads its own database): two
 * hosts in one process, as tests start them, each have their own.
 */
export class OrderBooks {
  readonly #books = new Map<string, Order[]>();

  /** The person's orders; a new person starts with the same two. */
  of(subject: string): Order[] {
    let book = this.#books.get(subject);
    if (!book) {
      book = [
        { id: 'A-1001', item: 'Espresso machine', status: 'open', note: null },
        { id: 'A-1002', item: 'Coffee grinder', status: 'open', note: null },
      ];
      this.#books.set(subject, book);
    }
    return book;
  }

  /** The signed-in person's orders, as `list_orders` answers them and the orders page shows them. */
  listed(subject: string): { count: number; orders: Order[] } {
    const orders = this.of(subject);
    return { count: orders.length, orders };
  }

  /** How many of the person's orders there are, in all and by status: figures and a chart for a screen. */
  stats(subject: string): {
    count: number;
    open: number;
    cancelled: number;
    byStatus: Array<{ status: Order['status']; count: number }>;
  } {
    const orders = this.of(subject);
    const counted = (status: Order['status']) => orders.filter((order) => order.status === status).length;
    return {
      count: orders.length,
      open: counted('open'),
      cancelled: counted('cancelled'),
      byStatus: (['open', 'cancelled'] as const).map((status) => ({ status, count: counted(status) })),
    };
  }
}

/**
 * What `list_orders` returns, declared so an app's bindings to it are checked when it is built
 * (a field not listed here refuses the app).
 */
const ORDERS_OUTPUT = z.object({
  count: z.number().int().describe('how many orders there are'),
  orders: z.array(
    z.object({
      id: z.string(),
      item: z.string(),
      status: z.enum(['open', 'cancelled']),
      note: z.string().nullable(),
    }),
  ),
});

const STATS_OUTPUT = z.object({
  count: z.number().int(),
  open: z.number().int(),
  cancelled: z.number().int(),
  byStatus: z.array(z.object({ status: z.enum(['open', 'cancelled']), count: z.number().int() })),
});

/** The demo's tools, over `books`. */
export function orderTools(books: OrderBooks): AnyHostTool[] {
  return [
    defineTool({
      name: 'list_orders',
      title: 'List orders',
      description: 'Lists the signed-in user’s orders with their status.',
      input: z.object({}),
      output: ORDERS_OUTPUT,
      risk: 'read',
      execute: (_input, { principal }) => books.listed(principal.subject),
    }),
    defineTool({
      name: 'order_stats',
      title: 'Order figures',
      description: 'Counts the signed-in user’s orders: in all, open, cancelled, and by status.',
      input: z.object({}),
      output: STATS_OUTPUT,
      risk: 'read',
      execute: (_input, { principal }) => books.stats(principal.subject),
    }),
    defineTool({
      name: 'add_order_note',
      title: 'Add a note to an order',
      description: 'Adds a short note to one of the user’s orders.',
      input: z.object({ orderId: z.string(), note: z.string().max(500) }),
      risk: 'write',
      execute: ({ orderId, note }, { principal }) => {
        const order = books.of(principal.subject).find((o) => o.id === orderId);
        if (!order) throw new Error(`No order ${orderId}`);
        order.note = note;
        return order;
      },
    }),
    defineTool({
      name: 'cancel_order',
      title: 'Cancel an order',
      description: 'Cancels one of the user’s orders. Needs the user’s approval.',
      input: z.object({ orderId: z.string() }),
      risk: 'destructive',
      execute: ({ orderId }, { principal }) => {
        const order = books.of(principal.subject).find((o) => o.id === orderId);
        if (!order) throw new Error(`No order ${orderId}`);
        order.status = 'cancelled';
        return order;
      },
    }),
  ];
}

/** The tools over a book of their own, for hosts that keep one per process (and for `service sync`). */
export const hostTools: AnyHostTool[] = orderTools(new OrderBooks());

/** The same list under the name `service sync` reads from a host's tools module. */
export { hostTools as tools };
