/**
 * One published batch as subscribers see it: offsets, payloads, and its encodings. A batch is
 * encoded at most once per frame variant (offsets, timestamps, JSON), whatever the number of
 * subscribers, and every subscriber's queue holds a reference to the same bytes.
 */

import { type PayloadList, payloadListViews } from '@felix/wire';

/** A batch's records: payload views, or one checked wire list split only when needed. */
export type Payloads = readonly Uint8Array[] | PayloadList;

/** Frame variant key: the subset of event flags a subscriber negotiated, or -1 for JSON. */
export type EventVariant = number;

/** One encoded frame as parts written back to back (a head and the published list, say). */
export type EncodedFrame = readonly Uint8Array[];

export type EventEncoder = (batch: EventBatch, variant: EventVariant) => EncodedFrame;

export class EventBatch {
  private readonly encodings = new Map<EventVariant, EncodedFrame>();
  /** Records in the batch. */
  readonly count: number;
  /** Payload bytes in the batch. */
  readonly bytes: number;
  /** The publish frame's `u32 count, count × {u32 len, bytes}` bytes (views, in order), when
   *  the batch arrived as one binary frame: the binary event encoding forwards them as they are. */
  readonly list: readonly Uint8Array[] | undefined;
  /** Total bytes of `list`. */
  readonly listBytes: number;
  private views: readonly Uint8Array[] | null;
  private readonly wire: PayloadList | null;

  constructor(
    readonly first: number,
    payloads: Payloads,
    readonly timestampMicros: number,
    /** Offsets immediately before `first` that hold no event (history only). */
    readonly skippedBefore = 0,
    /** One append time per record, when they differ (history read from the log spans several
     *  published batches); absent: every record has `timestampMicros`. */
    private readonly recordTimesMicros?: readonly number[],
  ) {
    if (isList(payloads)) {
      // Live fanout needs only the list; the per-record views (for history, JSON subscribers
      // and the durable log) are made on first use, so a ring of in-memory records holds one
      // object per batch instead of one per record.
      this.wire = payloads;
      this.views = null;
      this.list = payloads.list;
      this.listBytes = payloads.listBytes;
      this.count = payloads.count;
      this.bytes = payloads.bytes;
    } else {
      this.wire = null;
      this.views = payloads;
      this.list = undefined;
      this.listBytes = 0;
      this.count = payloads.length;
      let bytes = 0;
      for (const p of payloads) bytes += p.byteLength;
      this.bytes = bytes;
    }
  }

  /** The payloads one by one (views of the published frame). */
  get payloads(): readonly Uint8Array[] {
    this.views ??= payloadListViews(this.wire!);
    return this.views;
  }

  get next(): number {
    return this.first + this.count;
  }

  /** The append time of record `i` of the batch. */
  timeAt(i: number): number {
    return this.recordTimesMicros?.[i] ?? this.timestampMicros;
  }

  /** The append time of each record, in order (what the timestamped event variant carries). */
  timesMicros(): number[] {
    return this.recordTimesMicros !== undefined
      ? [...this.recordTimesMicros]
      : new Array<number>(this.count).fill(this.timestampMicros);
  }

  /** Subscriber queues still holding this batch; at 0 the encodings are let go. */
  private holders = 0;

  /** A subscriber queue took a reference. */
  retain(): void {
    this.holders++;
  }

  /** A subscriber wrote (or dropped) its reference; the last one frees the encodings (the ring
   *  keeps the payloads, and history is encoded afresh per subscriber). */
  release(): void {
    if (--this.holders <= 0) {
      this.holders = 0;
      this.encodings.clear();
    }
  }

  /** The encoding for `variant`, built on first use and shared afterwards. */
  encoded(variant: EventVariant, encode: EventEncoder, onEncode?: () => void): EncodedFrame {
    let bytes = this.encodings.get(variant);
    if (!bytes) {
      bytes = encode(this, variant);
      this.encodings.set(variant, bytes);
      onEncode?.();
    }
    return bytes;
  }

  /** The records at and after `from` as a new (unshared) batch. */
  sliceFrom(from: number): EventBatch {
    if (from <= this.first) return this;
    const at = from - this.first;
    return new EventBatch(
      from,
      this.payloads.slice(at),
      this.recordTimesMicros?.[at] ?? this.timestampMicros,
      0,
      this.recordTimesMicros?.slice(at),
    );
  }
}

/** The records of a batch as an array of views (what the durable log appends). */
export function payloadArray(payloads: Payloads): Uint8Array[] {
  return isList(payloads) ? payloadListViews(payloads) : (payloads as Uint8Array[]);
}

/** Records and payload bytes of a batch. */
export function payloadCount(payloads: Payloads): { records: number; bytes: number } {
  if (isList(payloads)) return { records: payloads.count, bytes: payloads.bytes };
  let bytes = 0;
  for (const p of payloads) bytes += p.byteLength;
  return { records: payloads.length, bytes };
}

function isList(payloads: Payloads): payloads is PayloadList {
  return !Array.isArray(payloads);
}
