/**
 * Ordered publish answers on one client stream, with the publish window. Answers are written in
 * request order whatever order their appends finish in; at `window` unanswered publishes the
 * reader waits in `room()`, so the broker stops reading that stream and transport flow control
 * backs the client off. Answers that are ready together go out in one write (one syscall, one
 * TLS record or QUIC packet train instead of one per ack). An answer that is ready when it is
 * queued (a hot cache get) is written in that turn when nothing is queued ahead of it.
 */
import type { TransportStream } from '@felix/transport';
import { ANSWER_WRITE_BYTES_MAX, RING_COMPACT_SLOTS_MIN } from '../limits.js';

/** What an answer pipe tells its connection's ledger (byte-budget.ts) about the bytes its
 *  entries pin. */
export interface AnswerCharges {
  charge(bytes: number): void;
  release(bytes: number): void;
}

interface Entry {
  done: boolean;
  bytes: Uint8Array | null;
  /** Request bytes the entry pins until it is taken (its frame: a publish batch's views). */
  charge: number;
}

/** What a taken slot holds instead of its entry. */
const DONE: Entry = Object.freeze({ done: true, bytes: null, charge: 0 }) as Entry;

export class AnswerPipe {
  private readonly entries: Entry[] = [];
  private head = 0;
  private writing = false;
  private waiter: (() => void) | null = null;
  private drained: Array<() => void> = [];
  broken: unknown = null;
  /** The bytes of the request being dispatched, charged to the entry it queues. */
  private nextCharge = 0;

  constructor(
    private readonly stream: TransportStream,
    private readonly window: number,
    /** The connection's ledger: each entry's request bytes count there until it is written. */
    private readonly charges?: AnswerCharges,
  ) {}

  /**
   * Names the bytes of the request about to be handed to its handler: the entry it queues
   * (if any) pins them until its answer is written. The session sets it per request and clears
   * it (0) once the handler returned, so handlers need not know.
   */
  chargeNext(bytes: number): void {
    this.nextCharge = bytes;
  }

  /** The pending charge, taken by the entry being queued (counted in the ledger). */
  private takeCharge(): number {
    const charge = this.nextCharge;
    if (charge === 0) return 0;
    this.nextCharge = 0;
    this.charges?.charge(charge);
    return charge;
  }

  get pending(): number {
    return this.entries.length - this.head;
  }

  /** True while fewer than `window` answers are unanswered (`room()` would not wait). */
  get hasRoom(): boolean {
    return this.entries.length - this.head < this.window;
  }

  /** Queues an answer; `null` means the publish owes none (still counts until it settles). */
  push(answer: Promise<Uint8Array | null>): void {
    const entry: Entry = { done: false, bytes: null, charge: this.takeCharge() };
    this.entries.push(entry);
    answer.then(
      (bytes) => {
        entry.bytes = bytes;
        entry.done = true;
        this.pump();
      },
      (err: unknown) => {
        // An answer that cannot be made (a handler's bug) leaves its request unanswered, and
        // every later answer on the stream would be read as an earlier request's: the stream is
        // reset, so the client reports what waits on it as unknown, never as not applied.
        if (this.broken === null) this.stream.reset(0);
        this.broken ??= err;
        entry.done = true;
        this.pump();
      },
    );
  }

  /**
   * Queues an answer whose bytes are ready. With nothing queued ahead of it and no write in
   * progress it is written at once (no promise of its own, no extra turn); otherwise it waits
   * behind the answers before it, so answers keep request order.
   */
  pushReady(bytes: Uint8Array): void {
    if (this.head === this.entries.length && !this.writing && this.broken === null) {
      this.nextCharge = 0; // written at once: it pins nothing past this call
      this.write(bytes);
      return;
    }
    this.entries.push({ done: true, bytes, charge: this.takeCharge() });
    this.pump();
  }

  private pump(): void {
    // Each pass writes the answers ready at the head; a write accepted at once goes on to the next.
    while (!this.writing) {
      const chunk = this.takeReady();
      if (chunk === null) return;
      this.write(chunk);
    }
  }

  /** The answers ready at the head of the pipe as one write (null when none is), their
   *  charges released and the reader and drain waiters told. */
  private takeReady(): Uint8Array | null {
    const parts: Uint8Array[] = [];
    let bytes = 0;
    let released = 0;
    while (
      this.head < this.entries.length &&
      this.entries[this.head]!.done &&
      bytes < ANSWER_WRITE_BYTES_MAX
    ) {
      const e = this.entries[this.head]!;
      // Cleared as it is taken: a written answer must not stay reachable (with the buffer its
      // bytes view) until the array is next compacted.
      this.entries[this.head] = DONE;
      this.head++;
      released += e.charge;
      if (e.bytes && this.broken === null) {
        parts.push(e.bytes);
        bytes += e.bytes.byteLength;
      }
    }
    if (this.head >= RING_COMPACT_SLOTS_MIN && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
    if (released > 0) this.charges?.release(released);
    this.wakeReader();
    if (parts.length === 0) {
      if (this.pending === 0) for (const d of this.drained.splice(0)) d();
      return null;
    }
    return parts.length === 1 ? parts[0]! : concat(parts, bytes);
  }

  /** Writes `chunk`; `writing` stays set until its write settles, unless it was accepted at
   *  once (`writeNow`: no promise or reaction per answer). */
  private write(chunk: Uint8Array): void {
    const stream = this.stream;
    const pending = stream.writeNow !== undefined ? stream.writeNow(chunk) : stream.write(chunk);
    if (pending === null) return;
    this.writing = true;
    pending.then(this.written, this.writeFailed);
  }

  private readonly written = (): void => {
    this.writing = false;
    this.pump();
  };

  private readonly writeFailed = (err: unknown): void => {
    this.broken ??= err;
    this.writing = false;
    this.pump();
  };

  private wakeReader(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  /** Waits until fewer than `window` publishes are unanswered. */
  async room(): Promise<void> {
    while (this.pending >= this.window) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  /** Resolves once every queued answer is written (or the stream broke). */
  drain(): Promise<void> {
    if (this.pending === 0 && !this.writing) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }
}

function concat(parts: Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
