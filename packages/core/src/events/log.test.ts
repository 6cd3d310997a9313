import { describe, expect, it } from 'vitest';
import type { ServiceEvent } from '../schemas/events.js';
import { type EventNotice, eventNotices, type StoredEvent, sseNamesOf } from './log.js';

const event = (appId: string, seq: number, extra = ''): StoredEvent => ({
  appId,
  seq,
  payload: {
    id: String(seq),
    at: '2026-11-23T00:00:00.000Z',
    kind: 'billing.usage_recorded',
    provider: `p${extra}`,
    micros: seq,
  } as ServiceEvent,
});

describe('event notices', () => {
  it('carries events themselves, in order, cut to fit a NOTIFY payload', () => {
    const events = Array.from({ length: 200 }, (_, i) => event(i % 2 ? 'app-b' : 'app-a', i + 1));
    const notices = eventNotices(events);
    expect(notices.length).toBeGreaterThan(1);
    for (const notice of notices) expect(Buffer.byteLength(notice)).toBeLessThan(8000);
    const carried = notices.flatMap((n) => (JSON.parse(n) as EventNotice).e ?? []);
    expect(carried.map(([, seq]) => seq)).toEqual(events.map((e) => e.seq));
    expect(carried[0]).toEqual(['app-a', 1, events[0]!.payload]);
  });

  it('names an app whose event is too big to travel, and sends none of its later events', () => {
    const notices = eventNotices([event('small', 1), event('big', 1, 'x'.repeat(9000)), event('big', 2)]);
    const parsed = notices.map((n) => JSON.parse(n) as EventNotice);
    expect(parsed.flatMap((n) => n.e ?? []).map(([app]) => app)).toEqual(['small']);
    expect(parsed.flatMap((n) => n.a ?? [])).toEqual(['big']);
  });

  it('sends each event under its kind, then its legacy alias when it has one', () => {
    expect(sseNamesOf('connection.connected')).toEqual(['connection.connected', 'connection_created']);
    expect(sseNamesOf('connection.status_changed')).toEqual([
      'connection.status_changed',
      'connection_updated',
    ]);
    expect(sseNamesOf('billing.balance_changed')).toEqual(['billing.balance_changed']);
  });
});
