/**
 * The slice of a log the projections need: claim offsets and a commit turn for a batch (the
 * durable half resolves later, so concurrent writers share one flush), read, pick a compaction
 * cut, trim whole segments below it. LogCache and CounterLog are written against this so they
 * run on an in-memory log in tests; `SegmentLogPort` adapts the real SegmentLog.
 */
import type { Turn } from '../commit-sequencer.js';

export interface PortRecord {
  offset: number;
  timestampMicros: number;
  payload: Uint8Array;
}

export type PortReadResult =
  | { kind: 'records'; records: PortRecord[]; next: number }
  | { kind: 'trimmed'; requested: number; oldest: number };

export interface Claim {
  first: number;
  next: number;
  /** The batch's place in the log's apply order: wait, apply, then release (or abandon). */
  turn: Turn;
  /** Resolves once the batch is durable under the log's fsync mode; rejects if it never will be. */
  durable: Promise<void>;
}

export interface ProjectionLog {
  /** Oldest retained offset. */
  readonly baseOffset: number;
  /** Next offset the log will assign (claims in flight included). */
  readonly tailOffset: number;
  /** Bytes of records held (framing included), for the compaction trigger. */
  readonly sizeBytes: number;
  /**
   * True while segments below the last cut `trimBelow` was asked for are still held (the log's
   * retention floor keeps them until it rises): a pass now would restate the same entries again.
   */
  readonly trimWaiting: boolean;
  /**
   * The error that stopped the log (a failed flush poisons it), or undefined while it works. A
   * poisoned log reads only what was durable: a record acknowledged past that is out of reach.
   */
  readonly poison: Error | undefined;
  /**
   * Claims offsets for the batch. The batch takes its place in offset order synchronously, at
   * the call (that is the short lock: nothing else can claim in between); the promise resolves
   * once it is written.
   */
  claim(payloads: Uint8Array[]): Promise<Claim>;
  read(from: number, budget?: { maxBytes?: number; maxRecords?: number }): Promise<PortReadResult>;
  /** Makes everything written durable, whatever the fsync mode. */
  flush(): Promise<void>;
  /** Chooses a compaction cut: every record below it is written; records at or past it stay. */
  seal(): Promise<number>;
  /**
   * Deletes whole segments lying entirely below `cut`, oldest first, syncing the directory after
   * each. Records at or past `cut` and reads in progress are unaffected.
   */
  trimBelow(cut: number): Promise<void>;
  close(): Promise<void>;
}
