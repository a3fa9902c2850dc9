/**
 * One published batch as subscribers see it: offsets, payloads, and its encodings. A batch is
 * encoded at most once per frame variant (offsets, timestamps, JSON), whatever the number of
 * subscribers, and every subscriber's queue holds a reference to the same bytes.
 */

/** Frame variant key: the subset of event flags a subscriber negotiated, or -1 for JSON. */
export type EventVariant = number;

export type EventEncoder = (batch: EventBatch, variant: EventVariant) => Uint8Array;

export class EventBatch {
  private readonly encodings = new Map<EventVariant, Uint8Array>();
  readonly bytes: number;

  constructor(
    readonly first: number,
    readonly payloads: readonly Uint8Array[],
    readonly timestampMicros: number,
    /** Offsets immediately before `first` that hold no event (history only). */
    readonly skippedBefore = 0,
  ) {
    let bytes = 0;
    for (const p of payloads) bytes += p.byteLength;
    this.bytes = bytes;
  }

  get next(): number {
    return this.first + this.payloads.length;
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
  encoded(variant: EventVariant, encode: EventEncoder, onEncode?: () => void): Uint8Array {
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
    return new EventBatch(from, this.payloads.slice(from - this.first), this.timestampMicros);
  }
}
