/**
 * One compaction pass over a projection's log (wire-storage §4.6): seal the active segment (its
 * base is the cut), restate every live record below the cut at the tail in bounded batches, each
 * staged like a write, flush, then delete the sealed segments below the cut oldest-first. Offsets
 * continue (they become sparse, never rewind). Crash-safe at every step: copies only restate what
 * the log already says, and nothing is deleted before every copy is flushed. Runs off the write
 * path: writers interleave between batches and never wait for a pass.
 */
import type { ProjectionLog } from '../cache/log-port.js';
import { COMPACTION_BYTES_PER_SEC_DEFAULT, COMPACTION_ROUNDS_MAX } from '../limits.js';

/** Copies one batch (at most `COMPACTION_BATCH_RECORDS` records) when called. */
export type CopyBatch = () => Promise<{ records: number; bytes: number }>;

/** What a projection exposes to the compactor. */
export interface CompactionTarget {
  readonly log: ProjectionLog;
  /** How many keys still hold state below `cut` that must be restated before trimming. */
  pendingBelow(cut: number): number;
  /**
   * One round: the batches that restate what lies below `cut` at the tail. Each batch is staged
   * like a write; keys with a staged write are skipped (a later round picks them up).
   */
  batches(cut: number): AsyncIterable<CopyBatch>;
  /**
   * With the projection quiesced: if nothing below `cut` still needs a copy, deletes the segments
   * below it and answers true.
   */
  trim(cut: number): Promise<boolean>;
  /** Chooses the cut (seals the active segment), with the projection quiesced. */
  seal(): Promise<number>;
  /** True once the projection is closing: the pass stops at the next step. */
  stopping(): boolean;
}

/** What a key-indexed projection (cache, counters) gives the compactor. */
export interface KeyedProjection {
  readonly log: ProjectionLog;
  /** Keys whose current state still lives below `cut`. */
  keysBelow(cut: number): readonly string[];
  /** One round of copies restating those keys at the tail. */
  copyBatches(cut: number): AsyncIterable<CopyBatch>;
  stopping(): boolean;
}

/**
 * The compaction target of a key-indexed projection: nothing below the cut may be trimmed while
 * a key there still holds current state, so `trim` re-checks with the projection quiesced.
 */
export function keyedCompactionTarget(p: KeyedProjection): CompactionTarget {
  return {
    log: p.log,
    pendingBelow: (cut) => p.keysBelow(cut).length,
    batches: (cut) => p.copyBatches(cut),
    seal: () => p.log.seal(),
    trim: (cut) =>
      p.keysBelow(cut).length > 0 ? Promise.resolve(false) : p.log.trimBelow(cut).then(() => true),
    stopping: () => p.stopping(),
  };
}

/** At most one compaction pass at a time per projection: a second request joins the first. */
export class CompactionPass {
  private running: Promise<CompactionResult> | undefined;

  /** The pass in progress, if any. */
  get current(): Promise<CompactionResult> | undefined {
    return this.running;
  }

  /** Starts `target`'s pass unless one is running, and answers the pass in progress. */
  run(target: () => CompactionTarget, opts?: CompactionOptions): Promise<CompactionResult> {
    if (this.running === undefined) {
      this.running = runCompaction(target(), opts).finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }
}

export interface CompactionOptions {
  /** Copy budget in bytes per second; 0 = unlimited. */
  bytesPerSec?: number;
  /** Awaited before each batch (tests hold a pass here to prove writers do not wait on it). */
  beforeBatch?: () => Promise<void>;
  /** Awaited after the flush and before segments are deleted (crash tests stop here). */
  beforeTrim?: () => Promise<void>;
}

export interface CompactionResult {
  cut: number;
  copiedRecords: number;
  copiedBytes: number;
  rounds: number;
  /** True when segments below the cut were deleted (false if live records remained or stopping). */
  trimmed: boolean;
}

export async function runCompaction(
  target: CompactionTarget,
  opts: CompactionOptions = {},
): Promise<CompactionResult> {
  const rate = opts.bytesPerSec ?? COMPACTION_BYTES_PER_SEC_DEFAULT;
  const started = performance.now();
  const cut = await target.seal();
  const result: CompactionResult = {
    cut,
    copiedRecords: 0,
    copiedBytes: 0,
    rounds: 0,
    trimmed: false,
  };
  while (result.rounds < COMPACTION_ROUNDS_MAX && target.pendingBelow(cut) > 0) {
    result.rounds++;
    for await (const copy of target.batches(cut)) {
      if (target.stopping()) return result;
      await opts.beforeBatch?.();
      if (target.stopping()) return result;
      const copied = await copy();
      result.copiedBytes += copied.bytes;
      result.copiedRecords += copied.records;
      await pace(rate, result.copiedBytes, started);
    }
  }
  if (target.stopping()) return result;
  await target.log.flush();
  await opts.beforeTrim?.();
  if (target.stopping()) return result;
  result.trimmed = await target.trim(cut);
  return result;
}

async function pace(bytesPerSec: number, bytes: number, startedMs: number): Promise<void> {
  if (bytesPerSec <= 0) return;
  const dueMs = (bytes / bytesPerSec) * 1000 - (performance.now() - startedMs);
  if (dueMs > 1) await new Promise((r) => setTimeout(r, dueMs));
}
