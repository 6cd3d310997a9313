import { constants, fstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createBatcher } from '../internal/batcher.js';
import type { InstanceHeartbeat } from '../store/instances.js';
import type { Settlement } from './settlement.js';

/**
 * The settlement journal: a durable, append-only record of every answered metered call, written
 * before the caller's response ends, so a call is billed even when the process stops or the
 * store is unreachable. One line of JSON per call in a segment file of this process under the
 * journal folder; appends that arrive together share one synchronized write (group commit).
 *
 * A record is forgotten once its settlement commits in the store; a segment whose records have
 * all settled is deleted (segments roll over every `SEGMENT_RECORDS`, so a busy instance never
 * waits for a quiet moment to shed its file). Segments are named after the instance that writes
 * them (its heartbeat id in the store). Periodically the segments of instances whose heartbeat
 * has lapsed (a crash, a SIGKILL, a container replaced under another host name) are adopted:
 * renamed to this instance, and their records handed back for settlement. The rename is the
 * claim: it is atomic on one filesystem, so of two adopters racing for a segment one finds it
 * gone. Settlement is idempotent by usage id, so replaying a record that had already settled
 * bills nothing twice.
 *
 * Segments written before segments were named after instances
 * (`settlements.<host>.<pid>.<boot>.<seq>.jsonl`) are adopted by the rule they were written
 * under: on the same host, once their process is no longer running.
 *
 * @see docs/billing.md "Settlement journal"
 */
export interface SettlementJournal {
  /** The folder the segments live in. */
  readonly dir: string;
  /** Appends a record; resolves once it is on disk. */
  append(settlement: Settlement): Promise<void>;
  /** The record's settlement committed: it is no longer needed. */
  settled(usageId: string): void;
  /**
   * Takes over the segments of instances that are gone (`lapsed` says which of the named
   * instances no longer beat in the store; without it only old-named segments are looked at)
   * and returns their records to settle.
   */
  adopt(lapsed?: (instanceIds: string[]) => Promise<ReadonlySet<string>>): Promise<Settlement[]>;
  /** Records appended or adopted and not yet settled. */
  readonly pendingCount: number;
  /** Closes the file; a segment whose records have all settled is removed. */
  close(): Promise<void>;
}

export interface SettlementJournalOptions {
  /**
   * The heartbeat id of the instance writing (`store/instances.ts`): segments are named after it
   * and adopted by others once its heartbeat lapses. Without one, segments carry the host name
   * and process id and are adopted only on this host once the process is gone.
   */
  instanceId?: string;
  /**
   * That instance's heartbeat. While it stays fresh and has not lapsed since a segment began, no
   * other instance can have judged it dead and taken the segment, so a write need not look that
   * the segment is still at its name. Without one, every write looks.
   */
  heartbeat?: Pick<InstanceHeartbeat, 'fresh' | 'lapses'>;
  /** Records per segment before a new one is started. Default 4096. */
  segmentRecords?: number;
  /** Told about lines that cannot be read (a torn last line after a crash). */
  onUnreadable?: (file: string, line: number) => void;
  /** Told when the segment being written was found deleted (its folder removed): a fresh one is started. */
  onSegmentLost?: (file: string) => void;
}

const SEGMENT_RECORDS = 4096;
/**
 * Segments are opened for synchronized appends where the system has them: a write returns once
 * its data is on disk, one call to the thread pool instead of a write and an fdatasync.
 */
const APPEND_SYNCED =
  constants.O_DSYNC === undefined
    ? null
    : constants.O_APPEND | constants.O_CREAT | constants.O_WRONLY | constants.O_DSYNC;
const FORMAT_VERSION = 1;
/** `settlements.<instance id>.<seq>.jsonl` */
const INSTANCE_SEGMENT =
  /^settlements\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(\d+)\.jsonl$/;
/** `settlements.<host>.<pid>.<boot>.<seq>.jsonl`: the names of journals without an instance id. */
const HOST_SEGMENT = /^settlements\.([A-Za-z0-9-]+)\.(\d+)\.([a-z0-9]+)\.(\d+)\.jsonl$/;
/** Boots and instances of journals open in this process: their segments are alive whatever the store or the pid says. */
const liveBoots = new Set<string>();
const liveInstances = new Set<string>();

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
  const instanceId = options.instanceId?.toLowerCase();
  if (instanceId !== undefined && !INSTANCE_SEGMENT.test(`settlements.${instanceId}.0.jsonl`)) {
    throw new RangeError('The journal instance id must be a UUID');
  }
  const owner = instanceId ?? `${host}.${process.pid}.${boot}`;
  liveBoots.add(boot);
  if (instanceId) liveInstances.add(instanceId);
  const segmentFile = () => join(dir, `settlements.${owner}.${seq++}.jsonl`);
  const segmentRecords = options.segmentRecords ?? SEGMENT_RECORDS;
  const segmentOf = new Map<string, Segment>();
  const segments = new Set<Segment>();
  let seq = 0;
  /** The segment being appended to, and the heartbeat's lapses when it began. */
  let current: { segment: Segment; handle: FileHandle; records: number; lapses: number } | null = null;
  let closed = false;

  const startSegment = async () => {
    // The folder may have been removed since the last segment began: it is made again.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const segment: Segment = {
      file: segmentFile(),
      pending: new Set(),
      current: true,
    };
    segments.add(segment);
    const lapses = options.heartbeat?.lapses ?? 0;
    current = { segment, handle: await open(segment.file, APPEND_SYNCED ?? 'a', 0o600), records: 0, lapses };
  };

  const dropIfDone = (segment: Segment) => {
    if (segment.current || segment.pending.size > 0) return;
    segments.delete(segment);
    rmSync(segment.file, { force: true });
  };

  /** Writes and syncs text at the end of the segment. */
  const appendDurably = async (target: NonNullable<typeof current>, text: string) => {
    await target.handle.write(text);
    if (APPEND_SYNCED === null) await target.handle.datasync();
  };
  /**
   * Whether the segment's file is gone from the folder (no name links to it: deleted, alone or
   * with its folder), so what was written to it is lost with the process. Asked after every
   * write: a synchronous fstat costs microseconds on this thread, no trip to the thread pool.
   */
  const unlinked = (target: NonNullable<typeof current>) => fstatSync(target.handle.fd).nlink === 0;
  /** Whether another instance may have taken the segment: the heartbeat cannot rule it out. */
  const mayBeTaken = (target: NonNullable<typeof current>) =>
    !options.heartbeat?.fresh() || options.heartbeat.lapses !== target.lapses;

  // Group commit: the appends of one turn, and those made while a write is on its way to disk,
  // share the next synchronized write.
  const write = createBatcher(
    async (lines: Array<{ usageId: string; line: string }>) => {
      if (!current || current.records >= segmentRecords) {
        if (current) {
          const done = current;
          current = null;
          done.segment.current = false;
          await done.handle.close();
          dropIfDone(done.segment);
        }
        await startSegment();
      }
      let target = current!;
      const text = lines.map((l) => l.line).join('');
      await appendDurably(target, text);
      if (unlinked(target)) {
        // The segment was deleted while open (its folder removed): these lines reached no file a
        // restart would read. They go again to a fresh segment in the folder made again; when
        // that cannot be done either, the batch fails and its calls wait for the store instead.
        options.onSegmentLost?.(target.segment.file);
        current = null;
        target.segment.current = false;
        await target.handle.close().catch(() => {});
        dropIfDone(target.segment);
        await startSegment();
        target = current!;
        await appendDurably(target, text);
        if (unlinked(target)) {
          current = null;
          target.segment.current = false;
          await target.handle.close().catch(() => {});
          dropIfDone(target.segment);
          throw new Error(`The settlement journal segment ${target.segment.file} was deleted while written`);
        }
      } else if (mayBeTaken(target) && !(await stillNamed(target.segment.file))) {
        // Asked once the lines are on disk: an instance that takes the segment after this reads them.
        // Another instance judged this one dead and took the segment over (a long cut from the
        // store): it may have read the file before these lines landed. Write them again to a
        // fresh segment; a record settled twice bills once (settlement is idempotent by usage id).
        target.segment.current = false;
        await target.handle.close();
        await startSegment();
        target = current!;
        await appendDurably(target, text);
      }
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

  /** Claims a segment by renaming it to this instance and reads its records; null when another took it first. */
  const claim = (name: string): Settlement[] | null => {
    const file = segmentFile();
    try {
      renameSync(join(dir, name), file);
    } catch {
      return null;
    }
    const segment: Segment = { file, pending: new Set(), current: false };
    segments.add(segment);
    const found: Settlement[] = [];
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
    return found;
  };

  const adopt: SettlementJournal['adopt'] = async (lapsed) => {
    if (closed) return [];
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const orphans: string[] = [];
    const byInstance = new Map<string, string[]>();
    for (const name of names) {
      const legacy = HOST_SEGMENT.exec(name);
      if (legacy) {
        if (hostProcessIsGone(legacy[1]!, Number(legacy[2]), legacy[3]!, host)) orphans.push(name);
        continue;
      }
      const owned = INSTANCE_SEGMENT.exec(name)?.[1];
      if (!owned || liveInstances.has(owned)) continue;
      byInstance.set(owned, [...(byInstance.get(owned) ?? []), name]);
    }
    if (byInstance.size > 0 && lapsed) {
      // The store is asked only about instances with segments here; unreachable: none is judged gone.
      const gone = await lapsed([...byInstance.keys()]).catch(() => new Set<string>());
      for (const [owned, files] of byInstance) if (gone.has(owned)) orphans.push(...files);
    }
    if (closed) return [];
    return orphans.flatMap((name) => claim(name) ?? []);
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
      if (instanceId) liveInstances.delete(instanceId);
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
/** Whether a segment is still at its name (not renamed away by an instance that adopted it). */
async function stillNamed(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

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
 * The rule for old-named segments: the writer is gone when it ran on this host and its process
 * is no longer running, or the pid now belongs to this process under another boot (a restarted
 * container is pid 1 again). Old-named segments of other hosts are never taken.
 */
function hostProcessIsGone(host: string, pid: number, boot: string, ownHost: string): boolean {
  if (host !== ownHost || liveBoots.has(boot)) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
