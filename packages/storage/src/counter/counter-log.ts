/**
 * CounterLog: counters as a fold over a log of signed 64-bit deltas (wire-storage §3.7, §4.6).
 * add appends a delta and answers the sum including it; the per-key sum is derived state, rebuilt
 * by replay on open. Overflow is refused before anything is appended, checked against the sum
 * every already-staged delta will produce. Compaction restates each key's fold as one checkpoint
 * at the tail (offsets continue). Same write path as LogCache (ProjectionWriter).
 */
import { assert } from '@felix/common';
import type { PortRecord, ProjectionLog } from '../cache/log-port.js';
import { CounterOverflowError, CounterRecordCorruptError } from '../errors.js';
import {
  COMPACTION_BATCH_RECORDS,
  COMPACTION_GARBAGE_RATIO,
  COUNTER_COMPACTION_FLOOR_BYTES_DEFAULT,
  RECORD_FRAMING_BYTES,
  REPLAY_PAGE_RECORDS_MAX,
} from '../limits.js';
import { type CommitGate, ProjectionWriter } from '../cache/projection-writer.js';
import {
  type CompactionOptions,
  type CompactionResult,
  type CopyBatch,
  CompactionPass,
  keyedCompactionTarget,
} from '../compaction/compactor.js';
import {
  COUNTER_RECORD_HEADER_BYTES,
  I64_MAX,
  I64_MIN,
  decodeCounterRecord,
  encodeCounterRecord,
} from './record.js';

interface FoldEntry {
  sum: bigint;
  /** Oldest offset the sum still depends on (the last checkpoint, or the first delta). */
  firstOffset: number;
  /** Bytes one checkpoint restating this key costs, framing included. */
  checkpointBytes: number;
}

export interface CounterLogOptions {
  log: ProjectionLog;
  compaction?: CompactionOptions & { auto?: boolean; floorBytes?: number };
  name?: string;
  /** A replicated quorum shard's: deltas are applied and answered once the mark covers them. */
  commitGate?: CommitGate;
}

const utf8 = new TextEncoder();

export class CounterLog {
  private readonly fold = new Map<string, FoldEntry>();
  /** Sum of staged (claimed, unapplied) deltas per key, for the overflow check. */
  private readonly stagedDelta = new Map<string, bigint>();
  private liveBytesTotal = 0;
  private readonly writer: ProjectionWriter;
  private readonly compactionPass = new CompactionPass();
  private stoppingFlag = false;

  private constructor(
    readonly log: ProjectionLog,
    private readonly opts: CounterLogOptions,
  ) {
    this.writer = new ProjectionWriter(
      log,
      opts.name ?? 'counter log',
      (from, to) => this.replay(from, to),
      opts.commitGate,
    );
  }

  static async open(opts: CounterLogOptions): Promise<CounterLog> {
    const c = new CounterLog(opts.log, opts);
    c.writer.frontier = await c.replay(opts.log.baseOffset, opts.log.tailOffset);
    return c;
  }

  get size(): number {
    return this.fold.size;
  }
  get liveBytes(): number {
    return this.liveBytesTotal;
  }

  /** Adds `delta` (signed 64-bit) and answers the sum including it, once durable. */
  async add(key: string, delta: bigint): Promise<bigint> {
    this.writer.checkOpen();
    const payload = encodeCounterRecord({ op: 'delta', key, value: delta });
    let stagedHere = false;
    let appliedHere = false;
    const sum = await this.writer
      .commit(
        () => {
          const staged = this.stagedDelta.get(key) ?? 0n;
          const projected = (this.fold.get(key)?.sum ?? 0n) + staged;
          const result = projected + delta;
          if (result < I64_MIN || result > I64_MAX)
            throw new CounterOverflowError(key, projected, delta);
          this.stagedDelta.set(key, staged + delta);
          stagedHere = true;
          return { keys: [key], payloads: [payload] };
        },
        (first) => {
          appliedHere = true;
          this.unstage(key, delta);
          return this.applyDelta(key, first, delta);
        },
        () => 0n,
      )
      .catch((err: unknown) => {
        if (stagedHere && !appliedHere) this.unstage(key, delta);
        throw err;
      });
    this.maybeCompact();
    return sum;
  }

  /** The sum, or undefined for a key never written (which is not 0). */
  async get(key: string): Promise<bigint | undefined> {
    this.writer.checkOpen();
    await this.writer.catchUpIfBehind();
    return this.fold.get(key)?.sum;
  }

  compact(): Promise<CompactionResult> {
    return this.compactionPass.run(
      () =>
        keyedCompactionTarget({
          log: this.log,
          keysBelow: (cut) => this.keysBelow(cut),
          copyBatches: (cut) => this.copyBatches(cut),
          stopping: () => this.stoppingFlag,
        }),
      this.opts.compaction,
    );
  }

  get compacting(): Promise<CompactionResult> | undefined {
    return this.compactionPass.current;
  }

  wantsCompaction(): boolean {
    const size = this.log.sizeBytes;
    const floor = this.opts.compaction?.floorBytes ?? COUNTER_COMPACTION_FLOOR_BYTES_DEFAULT;
    // A cut still held by the log's floor is trimmed when the floor rises: a pass meanwhile
    // would seal a segment and restate every live entry again, over and over.
    if (this.log.trimWaiting) return false;
    return size > floor && size > COMPACTION_GARBAGE_RATIO * this.liveBytesTotal;
  }

  async close(): Promise<void> {
    if (this.writer.closed) return;
    this.stoppingFlag = true;
    await this.writer.close();
    // Close only waits for the pass to stop: its failure is its starter's (an auto pass retries).
    await this.compactionPass.current?.catch(() => undefined);
    await this.log.close();
  }

  private maybeCompact(): void {
    if (this.opts.compaction?.auto === false || this.compactionPass.current !== undefined) return;
    if (this.stoppingFlag || !this.wantsCompaction()) return;
    // Off the write path: nobody awaits this; a failed pass is retried by a later trigger.
    this.compact().catch(() => undefined);
  }

  /** The fold needs no reads: keys below the cut are restated from memory, 64 at a time. */
  private async *copyBatches(cut: number): AsyncIterable<CopyBatch> {
    const keys = this.keysBelow(cut);
    for (let i = 0; i < keys.length; i += COMPACTION_BATCH_RECORDS) {
      const batch = keys.slice(i, i + COMPACTION_BATCH_RECORDS);
      yield () => this.copy(batch, cut);
    }
  }

  private keysBelow(cut: number): string[] {
    const keys: string[] = [];
    for (const [k, e] of this.fold) if (e.firstOffset < cut) keys.push(k);
    return keys;
  }

  private unstage(key: string, delta: bigint): void {
    const left = (this.stagedDelta.get(key) ?? 0n) - delta;
    if (left === 0n) this.stagedDelta.delete(key);
    else this.stagedDelta.set(key, left);
  }

  private entryFor(key: string, offset: number): FoldEntry {
    let e = this.fold.get(key);
    if (e === undefined) {
      const checkpointBytes =
        COUNTER_RECORD_HEADER_BYTES + utf8.encode(key).length + RECORD_FRAMING_BYTES;
      e = { sum: 0n, firstOffset: offset, checkpointBytes };
      this.fold.set(key, e);
      this.liveBytesTotal += checkpointBytes;
    }
    return e;
  }

  private applyDelta(key: string, offset: number, delta: bigint): bigint {
    const e = this.entryFor(key, offset);
    const sum = e.sum + delta;
    if (sum < I64_MIN || sum > I64_MAX) {
      throw new CounterRecordCorruptError(
        `delta ${delta} overflows the sum ${e.sum} of ${key}`,
        offset,
      );
    }
    e.sum = sum;
    return sum;
  }

  private applyRecord(r: PortRecord): void {
    const rec = decodeCounterRecord(r.payload, r.offset);
    if (rec.op === 'delta') {
      this.applyDelta(rec.key, r.offset, rec.value);
    } else {
      const e = this.entryFor(rec.key, r.offset);
      e.sum = rec.value;
      e.firstOffset = r.offset;
    }
  }

  private async replay(from: number, to: number): Promise<number> {
    let at = from;
    while (at < to) {
      const res = await this.log.read(at, { maxRecords: REPLAY_PAGE_RECORDS_MAX });
      if (res.kind === 'trimmed') {
        at = res.oldest;
        continue;
      }
      for (const r of res.records) {
        if (r.offset >= to) return to;
        this.applyRecord(r);
      }
      if (res.next <= at) return at;
      at = res.next;
    }
    return Math.max(at, from);
  }

  private copy(keys: string[], cut: number): Promise<{ records: number; bytes: number }> {
    let picked: { key: string; sum: bigint }[] = [];
    return this.writer.commit(
      () => {
        // Every delta staged now was claimed before this checkpoint, so it lands below it and
        // applies first: the checkpoint states the sum including them. (Skipping a key with a
        // staged delta, as before, never checkpointed a counter under constant adds, and its
        // log was never trimmed.)
        picked = keys.flatMap((key) => {
          const e = this.fold.get(key);
          if (e === undefined || e.firstOffset >= cut) return [];
          return [{ key, sum: e.sum + (this.stagedDelta.get(key) ?? 0n) }];
        });
        if (picked.length === 0) return undefined;
        const payloads = picked.map((p) =>
          encodeCounterRecord({ op: 'checkpoint', key: p.key, value: p.sum }),
        );
        return { keys: picked.map((p) => p.key), payloads };
      },
      (first, staging) => {
        let bytes = 0;
        picked.forEach((p, i) => {
          const e = this.fold.get(p.key);
          assert(e !== undefined && e.sum === p.sum, 'a checkpointed counter changed while staged');
          e.firstOffset = first + i;
          bytes += staging.payloads[i]!.length;
        });
        return { records: picked.length, bytes };
      },
      () => ({ records: 0, bytes: 0 }),
    );
  }
}
