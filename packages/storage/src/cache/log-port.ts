/**
 * The slice of a log the projections need: claim offsets for a batch (the durable half resolves
 * later, so concurrent writers share one flush), read, seal, trim whole segments below a cut.
 * LogCache and CounterLog are written against this so they can be tested on an in-memory log;
 * `segmentLogPort` adapts the real SegmentLog to it.
 */

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
  /** Resolves once the batch is durable under the log's fsync mode; rejects if it never will be. */
  durable: Promise<void>;
}

export interface ProjectionLog {
  /** Oldest retained offset. */
  readonly baseOffset: number;
  /** Next offset the log will assign. */
  readonly tailOffset: number;
  /** Bytes of records held (framing included), for the compaction trigger. */
  readonly sizeBytes: number;
  /** Claims offsets and writes the batch; callers serialise claims (the short lock). */
  claim(payloads: Uint8Array[]): Promise<Claim>;
  read(from: number, budget?: { maxBytes?: number; maxRecords?: number }): Promise<PortReadResult>;
  /** Makes everything written durable, whatever the fsync mode. */
  flush(): Promise<void>;
  /** Seals the active segment; every record below the returned cut is in sealed segments. */
  seal(): Promise<number>;
  /** Deletes whole sealed segments below `cut`, oldest first, syncing the directory after each. */
  trimBelow(cut: number): Promise<void>;
  close(): Promise<void>;
}
