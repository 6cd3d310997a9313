import { z } from 'zod';
import { connectionStatusSchema } from './connections.js';

/**
 * Events of the deployment SSE stream (`GET /api/deployments/me/events`). Every payload carries
 * `id` (the SSE event id), `at` (ISO 8601) and `kind` (the SSE event name).
 */
const base = { id: z.string(), at: z.string() };
const connection = { ...base, slug: z.string(), connection_id: z.string() };
const window = z.enum(['daily', 'monthly']);

export const serviceEventSchema = z.discriminatedUnion('kind', [
  z.object({ ...connection, kind: z.literal('connection.connected') }),
  z.object({ ...connection, kind: z.literal('connection.disconnected') }),
  z.object({ ...connection, kind: z.literal('connection.changed') }),
  z.object({ ...connection, kind: z.literal('connection.status_changed'), status: connectionStatusSchema }),
  z.object({
    ...base,
    kind: z.literal('billing.usage_recorded'),
    provider: z.string(),
    micros: z.number().int(),
  }),
  z.object({ ...base, kind: z.literal('billing.balance_changed'), remaining_micros: z.number().int() }),
  z.object({ ...base, kind: z.literal('billing.cap_warned'), window, pct: z.number() }),
  z.object({ ...base, kind: z.literal('billing.cap_tripped'), window }),
]);
export type ServiceEvent = z.infer<typeof serviceEventSchema>;
export type ServiceEventKind = ServiceEvent['kind'];

export const SERVICE_EVENT_KINDS = serviceEventSchema.options.map(
  (o) => o.shape.kind.value,
) as ServiceEventKind[];

/**
 * Legacy names (SDK versions up to 1.0.1), each sent as a separate SSE block with the same `id`
 * and payload right after the canonical block. New clients listen only to canonical kinds.
 */
export const LEGACY_EVENT_ALIASES: Partial<Record<ServiceEventKind, string>> = {
  'connection.connected': 'connection_created',
  'connection.disconnected': 'connection_deleted',
  'connection.changed': 'connection_updated',
  'connection.status_changed': 'connection_updated',
};
