import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createBatcher } from '../internal/batcher.js';
import type { Settlement } from './settlement.js';

/**
 * The settlement journal: a durable, append-only record of every answered metered call, written
 * before the caller's response ends, so a call is billed even when the process stops or the
 * store is unreachable. One line of JSON per call in a segment file of this process under the
 * journal folder; appends that arrive together share one write and one fdatasync (group commit).
 *
 * A record is forgotten once its settlement commits in the store; a segment whose records have
 * all settled is deleted (segments roll over every `SEGMENT_RECORDS`, so a busy instance never
 * waits for a quiet moment to shed its file). At open, and periodically after, the segments of
 * processes no longer running on this host (a crash, a SIGKILL, an earlier boot of this one) are
 * adopted: renamed to this process (so two live instances never replay the same file) and their
 * records handed back for settlement. Settlement is idempotent by usage id, so replaying a record
 * that had already settled bills nothing twice.
 *
 * @see docs/billing.md "Settlement journal"
 */
export interface SettlementJournal {
  /** The folder the segments live in. */
  readonly dir: string;
  /** Appends a record; resolves once it is on disk (fdatasync'd). */
  append(settlement: Settlement): Promise<void>;
  /** The record's settlement committed: it is no longer needed. */
  settled(usageId: string): void;
  /** Segments of processes no longer running on this host, taken over: their records to settle. */
  adopt(): Settlement[];
  /** Records appended or adopted and not yet settled. */
  readonly pendingCount: number;
  /** Closes the file; a segment whose records have all settled is removed. */
  close(): Promise<void>;
}

export interface SettlementJournalOptions {
  /** Records per segment before a new one is started. Default 4096. */
  segmentRecords?: number;
  /** Told about lines that cannot be read (a torn last line after a crash). */
  onUnreadable?: (file: string, line: number) => void;
}

const SEGMENT_RECORDS = 4096;
const FORMAT_VERSION = 1;
/** `settlements.<host>.<pid>.<boot>.<seq>.jsonl` */
const SEGMENT_NAME = /^settlements\.([A-Za-z0-9-]+)\.(\d+)\.([a-z0-9]+)\.(\d+)\.jsonl$/;
/** Boots of journals open in this process: their segments are alive whatever the pid says. */
const liveBoots = new Set<string>();

const quantities = z.record(z.string(), z.number());
const recordSchema = z.object({
  v: z.literal(FORMAT_VERSION),
  usageId: z.string().min(1),
  tenantId: z.string().min(1),
  appId: z.string().nullable(),
  connectionId: z.string().nullable(),
  keyId: z.string().nullable(),
  provider: z.string(),
  model: z.string().nullable(),
  quantities,
  meterCosts: quantities.optional(),
  costMicros: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  estimated: z.boolean(),
  upstreamStatus: z.number().int().nullable(),
  requestId: z.string().nullable(),
  holdMicros: z.number().int().nonnegative(),
  leaseId: z.string().nullable(),
});

interface Segment {
  file: string;
  /** Usage ids written here whose settlement has not committed yet. */
  pending: Set<string>;
  /** Still being appended to (the current segment is never deleted while open). */
  current: boolean;
}

export async function openSettlementJournal(
  dir: string,
  options: SettlementJournalOptions = {},
): Promise<SettlementJournal> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const host =
    hostname()
      .replace(/[^A-Za-z0-9-]/g, '-')
      .slice(0, 63) || 'host';
  const boot = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  liveBoots.add(boot);
  const segmentRecords = options.segmentRecords ?? SEGMENT_RECORDS;
  const segmentOf = new Map<string, Segment>();
  const segments = new Set<Segment>();
  let seq = 0;
  let current: { segment: Segment; handle: FileHandle; records: number } | null = null;
  let closed = false;

  const startSegment = async () => {
    const segment: Segment = {
      file: join(dir, `settlements.${host}.${process.pid}.${boot}.${seq++}.jsonl`),
      pending: new Set(),
      current: true,
    };
    segments.add(segment);
    current = { segment, handle: await open(segment.file, 'a', 0o600), records: 0 };
  };

  const dropIfDone = (segment: Segment) => {
    if (segment.current || segment.pending.size > 0) return;
    segments.delete(segment);
    rmSync(segment.file, { force: true });
  };

  // Group commit: the appends of one turn, and those made while a write is on its way to disk,
  // share the next write and fdatasync.
  const write = createBatcher(
    async (lines: Array<{ usageId: string; line: string }>) => {
      if (!current || current.records >= segmentRecords) {
        if (current) {
          const done = current;
          done.segment.current = false;
          await done.handle.close();
          dropIfDone(done.segment);
        }
        await startSegment();
      }
      const target = current!;
      await target.handle.write(lines.map((l) => l.line).join(''));
      await target.handle.datasync();
      target.records += lines.length;
      for (const { usageId } of lines) {
        // Settled while on its way to disk: nothing left to wait for.
        if (settledEarly.delete(usageId)) continue;
        target.segment.pending.add(usageId);
        segmentOf.set(usageId, target.segment);
      }
      return lines.map(() => undefined);
    },
    { maxBatch: 1024 },
  );
  /** Records whose settlement committed before their append reached the disk. */
  const settledEarly = new Set<string>();
  const writing = new Set<string>();

  const adopt = (): Settlement[] => {
    if (closed) return [];
    const found: Settlement[] = [];
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    for (const name of names) {
      const match = SEGMENT_NAME.exec(name);
      if (!match || !ownerIsGone(match[1]!, Number(match[2]), match[3]!, host)) continue;
      // The rename is the claim: of two instances adopting at once, one finds the file gone.
      const file = join(dir, `settlements.${host}.${process.pid}.${boot}.${seq++}.jsonl`);
      try {
        renameSync(join(dir, name), file);
      } catch {
        continue;
      }
      const segment: Segment = { file, pending: new Set(), current: false };
      segments.add(segment);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, index) => {
          if (text.trim() === '') return;
          const record = parseRecord(text);
          if (!record) {
            options.onUnreadable?.(name, index + 1);
            return;
          }
          if (segmentOf.has(record.usageId)) return;
          segment.pending.add(record.usageId);
          segmentOf.set(record.usageId, segment);
          found.push(record);
        });
      dropIfDone(segment);
    }
    return found;
  };

  return {
    dir,
    async append(settlement) {
      if (closed) throw new Error('The settlement journal is closed');
      const { retried: _retried, ...fields } = settlement;
      writing.add(settlement.usageId);
      try {
        await write({
          usageId: settlement.usageId,
          line: `${JSON.stringify({ v: FORMAT_VERSION, ...fields })}\n`,
        });
      } finally {
        writing.delete(settlement.usageId);
      }
    },
    settled(usageId) {
      const segment = segmentOf.get(usageId);
      if (!segment) {
        if (writing.has(usageId)) settledEarly.add(usageId);
        return;
      }
      segmentOf.delete(usageId);
      segment.pending.delete(usageId);
      dropIfDone(segment);
    },
    adopt,
    get pendingCount() {
      return segmentOf.size;
    },
    async close() {
      if (closed) return;
      closed = true;
      liveBoots.delete(boot);
      if (current) {
        const done = current;
        current = null;
        done.segment.current = false;
        await done.handle.close();
        dropIfDone(done.segment);
      }
    },
  };
}

/** A record line back as a settlement (a retry: its posting may have committed), or null when unreadable. */
function parseRecord(text: string): Settlement | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) return null;
  const { v: _v, meterCosts, ...fields } = parsed.data;
  return { ...fields, ...(meterCosts ? { meterCosts } : {}), retried: true };
}

/**
 * A segment's writer is gone when it ran on this host and its process is no longer running, or
 * the pid now belongs to this process under another boot (a restarted container is pid 1 again).
 * Segments of other hosts are never taken: their own host replays them.
 */
function ownerIsGone(host: string, pid: number, boot: string, ownHost: string): boolean {
  if (host !== ownHost || liveBoots.has(boot)) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
