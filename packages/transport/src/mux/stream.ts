/**
 * One multiplexed stream: its receive queue and credit, its send credit and queued writes, and
 * the state that decides when the stream is finished. All I/O goes through the session.
 */
import { type ConnectionClosedError, StreamResetError, StreamStateError } from '../errors.js';
import {
  MUX_READ_MERGE_PIECE_BYTES_MAX as MERGE_PIECE_BYTES_MAX,
  MUX_READ_MERGE_BYTES_MAX as READ_MERGE_BYTES_MAX,
} from '../limits.js';
import type { StreamKind, TransportStream } from '../types.js';

/** What a stream needs from its session. */
export interface StreamHost {
  sendData(id: number, chunk: Uint8Array): void;
  sendFin(id: number): void;
  sendReset(id: number, code: number): void;
  sendCredit(id: number, bytes: number): void;
  /** Resolves once the session's send buffer is below its bound. */
  writeReady(): Promise<void>;
  /** As `writeReady`, but null where that would be already resolved. */
  writeReadyNow(): Promise<void> | null;
  /** The stream finished at the protocol level (no more frames either way). */
  onStreamDone(stream: MuxStream): void;
  /** The stream finished for the application too (its id may be reused by the peer's count). */
  onStreamReleased(stream: MuxStream): void;
  recvBuffered(delta: number): void;
}

interface PendingWrite {
  chunk: Uint8Array;
  offset: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

const DONE: IteratorResult<Uint8Array> = { value: undefined, done: true };

export class MuxStream implements TransportStream {
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  // receive side
  private queue: Uint8Array[] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  private recvWindowLeft: number;
  private unreturnedCredit = 0;
  private recvFin: boolean;
  private finDelivered: boolean;
  private discarding = false;
  private readWaiter: ((r: IteratorResult<Uint8Array>) => void) | null = null;
  private readFail: ((e: Error) => void) | null = null;
  private iterated = false;
  /** The reader of `readChunks`: chunks go to it as they arrive, none are queued. */
  private sink: ((chunk: Uint8Array) => void) | null = null;
  private sinkEnd: ((err: Error | null) => void) | null = null;
  /** Set by `pauseChunks`: arriving chunks queue (uncredited) until `resumeChunks`. */
  private sinkPaused = false;

  // send side
  private sendCredit: number;
  private writes: PendingWrite[] = [];
  private endRequested = false;
  private endWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private finSent: boolean;

  private error: Error | null = null;
  private doneAtProtocol = false;
  private released = false;

  constructor(
    private readonly host: StreamHost,
    readonly id: number,
    readonly kind: StreamKind,
    readonly local: boolean,
    private readonly recvWindow: number,
    peerWindow: number,
  ) {
    const canRead = kind === 'bidi' || !local;
    const canWrite = kind === 'bidi' || local;
    this.recvFin = !canRead;
    this.finDelivered = !canRead;
    this.finSent = !canWrite;
    this.recvWindowLeft = recvWindow;
    this.sendCredit = peerWindow;
    this.closed = new Promise((r) => {
      this.resolveClosed = r;
    });
  }

  get canRead(): boolean {
    return this.kind === 'bidi' || !this.local;
  }

  get canWrite(): boolean {
    return this.kind === 'bidi' || this.local;
  }

  // ---- frames from the peer -------------------------------------------------------------

  /** False when the peer overran the window (a protocol error for the session to raise). */
  onData(payload: Uint8Array): boolean {
    if (payload.length > this.recvWindowLeft) return false;
    if (this.error || this.recvFin) return true; // late data after a reset/end is dropped
    this.recvWindowLeft -= payload.length;
    if (this.discarding) {
      this.returnCredit(payload.length);
      return true;
    }
    if (payload.length === 0) return true;
    const sink = this.sink;
    if (sink !== null && !this.sinkPaused) {
      this.returnCredit(payload.length);
      sink(payload);
      return true;
    }
    const w = this.readWaiter;
    if (w !== null) {
      this.readWaiter = null;
      this.readFail = null;
      this.returnCredit(payload.length);
      w({ value: payload, done: false });
      return true;
    }
    this.queue.push(payload);
    this.queuedBytes += payload.length;
    this.host.recvBuffered(payload.length);
    return true;
  }

  onFin(): void {
    if (this.recvFin || this.error) return;
    this.recvFin = true;
    if (this.queuedBytes === 0 && this.queueHead === this.queue.length) {
      if (this.readWaiter) {
        const w = this.readWaiter;
        this.readWaiter = null;
        this.readFail = null;
        this.finDelivered = true;
        w(DONE);
      } else if (this.discarding) {
        this.finDelivered = true;
      }
    }
    // A paused reader gets the half-close after what is queued, when it resumes.
    const end = this.sinkPaused ? null : this.sinkEnd;
    if (end !== null) {
      this.sink = null;
      this.sinkEnd = null;
      this.finDelivered = true;
    }
    this.checkDone();
    end?.(null);
  }

  onCredit(bytes: number): void {
    if (this.error || this.finSent) return;
    this.sendCredit += bytes;
    this.pumpWrites();
  }

  onPeerReset(code: number): void {
    if (this.error) return;
    this.fail(new StreamResetError(this.id, code, true));
  }

  /** The connection ended: fail everything still pending. */
  onConnectionClosed(err: ConnectionClosedError): void {
    if (this.error) return;
    if (this.recvFin && this.finSent && this.writes.length === 0) {
      // Already finished both ways; queued data stays readable.
      return;
    }
    this.fail(err);
  }

  private fail(err: Error): void {
    this.error = err;
    this.recvFin = true;
    this.finSent = true;
    this.dropQueue();
    for (const w of this.writes) w.reject(err);
    this.writes = [];
    for (const e of this.endWaiters) e.reject(err);
    this.endWaiters = [];
    if (this.readFail) {
      const f = this.readFail;
      this.readWaiter = null;
      this.readFail = null;
      f(err);
    }
    this.finDelivered = true;
    this.checkDone();
    const end = this.sinkEnd;
    this.sink = null;
    this.sinkEnd = null;
    end?.(err);
  }

  private dropQueue(): void {
    if (this.queuedBytes > 0) this.host.recvBuffered(-this.queuedBytes);
    this.queue = [];
    this.queueHead = 0;
    this.queuedBytes = 0;
  }

  // ---- application side -----------------------------------------------------------------

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterated) throw new StreamStateError(`stream ${this.id} is already being read`);
    this.iterated = true;
    if (!this.canRead) throw new StreamStateError(`stream ${this.id} is send-only`);
    return {
      next: () => this.next(),
      return: () => {
        this.stopReading();
        return Promise.resolve(DONE);
      },
    };
  }

  /** See TransportStream. May follow reads through the iterator once none is waiting. */
  readChunks(sink: (chunk: Uint8Array) => void, end: (err: Error | null) => void): void {
    if (this.sink !== null || this.readWaiter !== null)
      throw new StreamStateError(`stream ${this.id} is already being read`);
    this.iterated = true;
    if (!this.canRead) throw new StreamStateError(`stream ${this.id} is send-only`);
    if (this.error) {
      end(this.error);
      return;
    }
    this.sink = sink;
    this.sinkEnd = end;
    // What arrived before the reader came goes first, in order.
    this.deliverQueued();
  }

  /** See TransportStream. Only a `readChunks` reader pauses. */
  pauseChunks(): void {
    if (this.sink !== null) this.sinkPaused = true;
  }

  /** See TransportStream. */
  resumeChunks(): void {
    if (!this.sinkPaused) return;
    this.sinkPaused = false;
    this.deliverQueued();
  }

  /** Hands queued chunks to the sink until it pauses, then the half-close once none is left. */
  private deliverQueued(): void {
    while (this.queueHead < this.queue.length && !this.sinkPaused && this.sink !== null) {
      const c = this.queue[this.queueHead]!;
      this.queue[this.queueHead] = EMPTY;
      this.queueHead++;
      this.queuedBytes -= c.length;
      this.host.recvBuffered(-c.length);
      this.returnCredit(c.length);
      this.sink(c); // may pause, or resume and deliver the rest itself
    }
    if (this.queueHead < this.queue.length || this.sinkPaused || this.sink === null) return;
    this.queue = [];
    this.queueHead = 0;
    if (!this.recvFin) return;
    const end = this.sinkEnd;
    this.sink = null;
    this.sinkEnd = null;
    this.finDelivered = true;
    this.checkDone();
    end?.(null);
  }

  private next(): Promise<IteratorResult<Uint8Array>> {
    if (this.queueHead < this.queue.length) {
      let value = this.queue[this.queueHead]!;
      this.queue[this.queueHead] = EMPTY;
      this.queueHead++;
      if (this.queueHead < this.queue.length && value.length < MERGE_PIECE_BYTES_MAX) {
        // Several frames are waiting: hand them over as one chunk (one copy is cheaper than a
        // promise per frame, and a byte stream keeps no boundaries).
        value = this.mergeQueued(value);
      }
      if (this.queueHead === this.queue.length) {
        this.queue = [];
        this.queueHead = 0;
      }
      this.queuedBytes -= value.length;
      this.host.recvBuffered(-value.length);
      this.returnCredit(value.length);
      return Promise.resolve({ value, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.recvFin) {
      if (!this.finDelivered) {
        this.finDelivered = true;
        this.checkDone();
      }
      return Promise.resolve(DONE);
    }
    return new Promise((resolve, reject) => {
      this.readWaiter = resolve;
      this.readFail = reject;
    });
  }

  private mergeQueued(first: Uint8Array): Uint8Array {
    let end = this.queueHead;
    let total = first.length;
    while (end < this.queue.length) {
      const n = this.queue[end]!.length;
      if (n >= MERGE_PIECE_BYTES_MAX || total + n > READ_MERGE_BYTES_MAX) break;
      total += n;
      end++;
    }
    if (end === this.queueHead) return first;
    const out = new Uint8Array(total);
    out.set(first, 0);
    let at = first.length;
    for (let i = this.queueHead; i < end; i++) {
      const c = this.queue[i]!;
      out.set(c, at);
      at += c.length;
      this.queue[i] = EMPTY;
    }
    this.queueHead = end;
    return out;
  }

  /** The reader left early: drop what is queued and keep accepting (and crediting) until FIN. */
  private stopReading(): void {
    this.discarding = true;
    const bytes = this.queuedBytes;
    this.dropQueue();
    this.returnCredit(bytes);
    if (this.recvFin) this.finDelivered = true;
    this.checkDone();
  }

  private returnCredit(bytes: number): void {
    this.unreturnedCredit += bytes;
    // Return credit in halves of the window: one CREDIT frame per half window read.
    if (this.unreturnedCredit >= this.recvWindow >>> 1 && !this.recvFin) {
      this.recvWindowLeft += this.unreturnedCredit;
      this.host.sendCredit(this.id, this.unreturnedCredit);
      this.unreturnedCredit = 0;
    }
  }

  /** See TransportStream. */
  writeNow(chunk: Uint8Array): Promise<void> | null {
    if (this.error || this.writes.length !== 0 || chunk.length > this.sendCredit) {
      return this.write(chunk);
    }
    if (!this.canWrite || this.finSent || this.endRequested) return this.write(chunk);
    this.sendCredit -= chunk.length;
    if (chunk.length > 0) this.host.sendData(this.id, chunk);
    return this.host.writeReadyNow();
  }

  write(chunk: Uint8Array): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    if (!this.canWrite)
      return Promise.reject(new StreamStateError(`stream ${this.id} is receive-only`));
    if (this.finSent || this.endRequested) {
      return Promise.reject(new StreamStateError(`write after end on stream ${this.id}`));
    }
    if (this.writes.length === 0 && chunk.length <= this.sendCredit) {
      this.sendCredit -= chunk.length;
      if (chunk.length > 0) this.host.sendData(this.id, chunk);
      return this.host.writeReady();
    }
    return new Promise((resolve, reject) => {
      this.writes.push({ chunk, offset: 0, resolve, reject });
      this.pumpWrites();
    });
  }

  private pumpWrites(): void {
    while (this.writes.length > 0 && this.sendCredit > 0) {
      const w = this.writes[0]!;
      const left = w.chunk.length - w.offset;
      const n = Math.min(left, this.sendCredit);
      this.host.sendData(
        this.id,
        w.offset === 0 && n === left ? w.chunk : w.chunk.subarray(w.offset, w.offset + n),
      );
      this.sendCredit -= n;
      w.offset += n;
      if (w.offset === w.chunk.length) {
        this.writes.shift();
        this.host.writeReady().then(w.resolve, w.reject);
      }
    }
    if (this.writes.length === 0 && this.endRequested && !this.finSent) this.sendFinNow();
  }

  end(): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    if (!this.canWrite)
      return Promise.reject(new StreamStateError(`stream ${this.id} is receive-only`));
    if (this.finSent) return Promise.resolve();
    this.endRequested = true;
    if (this.writes.length === 0) {
      this.sendFinNow();
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => this.endWaiters.push({ resolve, reject }));
  }

  private sendFinNow(): void {
    this.finSent = true;
    this.host.sendFin(this.id);
    for (const e of this.endWaiters) e.resolve();
    this.endWaiters = [];
    this.checkDone();
  }

  reset(code: number): void {
    if (this.error) return;
    if (this.doneAtProtocol) {
      // Nothing left to abort on the wire; just drop what the reader has not taken.
      this.stopReading();
      return;
    }
    this.host.sendReset(this.id, code >>> 0);
    this.fail(new StreamResetError(this.id, code >>> 0, false));
  }

  get bufferedBytes(): number {
    return this.queuedBytes;
  }

  private checkDone(): void {
    if (!this.doneAtProtocol && this.recvFin && this.finSent) {
      this.doneAtProtocol = true;
      this.host.onStreamDone(this);
      this.resolveClosed();
    }
    if (this.doneAtProtocol && !this.released && this.finDelivered) {
      this.released = true;
      this.host.onStreamReleased(this);
    }
  }
}

const EMPTY = new Uint8Array(0);
