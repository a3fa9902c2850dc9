/**
 * Adapts one @matrixai/quic stream (WHATWG readable/writable) to TransportStream, mapping the
 * library's errors to ours and counting buffered bytes.
 */
import type { QUICStream } from '@matrixai/quic';
import { type ConnectionClosedError, StreamResetError, StreamStateError } from '../errors.js';
import { QUIC_RESET_DRAIN_BYTES_MAX, QUIC_RESET_DRAIN_MS_MAX } from '../limits.js';
import type { StreamKind, TransportStream } from '../types.js';
import { quicErrorText } from './error-text.js';

/** What a stream asks of its connection. */
export interface QuicStreamHost {
  /** The connection's close error once it is closed, else null. */
  closedError(): ConnectionClosedError | null;
  sendBuffered(delta: number): void;
}

/** The reason object handed to the library on reset; `reasonToCode` reads `resetCode` back. */
const errorEventName = 'EventQUICStreamError';

/** ErrorQUICStreamPeerRead / ErrorQUICStreamPeerWrite, recognised by name (two library copies). */
function isPeerError(e: unknown): boolean {
  const n = (e as { constructor?: { name?: string } } | undefined)?.constructor?.name;
  return n === 'ErrorQUICStreamPeerRead' || n === 'ErrorQUICStreamPeerWrite';
}

export class ResetReason extends Error {
  constructor(readonly resetCode: number) {
    super(`reset ${resetCode}`);
  }
}

/** What the library hands back for a peer's RESET_STREAM / STOP_SENDING (via codeToReason). */
export class PeerResetReason extends Error {
  constructor(readonly resetCode: number) {
    super(`peer reset ${resetCode}`);
  }
}

/** The library internals the adapter uses to release a write stuck on a collected stream. */
interface StreamInternals {
  writableController?: { error(e: unknown): void };
  rejectWritableP?: (e: unknown) => void;
  /** Rejects a direct reader waiting in `waitReadable` (a local reset ends its wait). */
  rejectReadableP?: (e: unknown) => void;
}

/**
 * Direct stream I/O of the patched library (vendor patch 12): quiche's stream read and written
 * without the WHATWG streams, which cost about a dozen promises per chunk each way. The stock
 * library (benchmarks only) has none of it and goes through `readable`/`writable`.
 */
interface DirectStream {
  enableDirect(): void;
  /** Bytes, `null` when none are ready (await `waitReadable`), `undefined` at the end. */
  readDirect(): Uint8Array | null | undefined;
  waitReadable(): Promise<void>;
  /** `undefined` when quiche took the whole chunk now, else settles once it has. */
  writeDirect(chunk: Uint8Array): Promise<void> | undefined;
}

const settled: Promise<void> = Promise.resolve();

function directOf(stream: QUICStream): DirectStream | null {
  const d = stream as unknown as Partial<DirectStream>;
  return typeof d.enableDirect === 'function' ? (d as DirectStream) : null;
}

export class QuicStreamAdapter implements TransportStream {
  readonly id: number;
  readonly kind: StreamKind;
  readonly closed: Promise<void>;
  private writer: WritableStreamDefaultWriter<Uint8Array> | null = null;
  private localReset: StreamResetError | null = null;
  private peerReset: StreamResetError | null = null;
  private ended = false;
  private iterated = false;
  private peerGone!: () => void;
  private readonly direct: DirectStream | null;
  /** quiche's streamSend copies what it takes, and a direct write settles once it took the
   *  whole chunk or failed for good (the stock library's writable is not relied on). */
  readonly copiesWrites: boolean;
  /** A direct write still waiting for quiche's capacity; later writes queue behind it. */
  private writing: Promise<void> | null = null;

  constructor(
    private readonly stream: QUICStream,
    private readonly host: QuicStreamHost,
    readonly local: boolean,
  ) {
    this.id = stream.streamId;
    this.kind = stream.type === 'uni' ? 'uni' : 'bidi';
    // Before the library's readable first pulls (a microtask after the stream was created).
    this.direct = directOf(stream);
    this.direct?.enableDirect();
    this.copiesWrites = this.direct !== null;
    // A peer reset aborts both directions. quiche may collect a stream reset both ways before
    // its write side is ever reported, so we fail our writes ourselves when the reset is seen.
    stream.addEventListener(errorEventName, (evt: Event) => {
      const detail = (evt as Event & { detail?: { data?: { code?: number } } }).detail;
      const code = detail?.data?.code;
      if (typeof code === 'number' && isPeerError(detail)) this.onPeerReset(code);
    });
    // A peer reset ends the stream for us as the multiplexer's RESET does, whether or not we
    // still read or write it. The library settles closedP only once both sides are closed, and
    // a side nobody reads or writes again stays open: a broker writer with nothing to send (an
    // idle watch) never learned that its reader had gone.
    this.closed = Promise.race([
      stream.closedP.then(
        () => {},
        () => {},
      ),
      new Promise<void>((resolve) => {
        this.peerGone = resolve;
      }),
    ]);
  }

  private get canRead(): boolean {
    return this.kind === 'bidi' || !this.local;
  }

  private get canWrite(): boolean {
    return this.kind === 'bidi' || this.local;
  }

  private onPeerReset(code: number): void {
    if (this.peerReset || this.localReset) return;
    this.peerReset = new StreamResetError(this.id, code, true);
    this.peerGone();
    const internals = this.stream as unknown as StreamInternals;
    try {
      internals.writableController?.error(this.peerReset);
      internals.rejectWritableP?.(this.peerReset);
    } catch {
      // already errored
    }
  }

  /** Turns whatever the library rejected with into our typed error. */
  private mapError(err: unknown): Error {
    if (this.localReset) return this.localReset;
    if (err instanceof PeerResetReason) return new StreamResetError(this.id, err.resetCode, true);
    if (this.peerReset) return this.peerReset;
    const closed = this.host.closedError();
    if (err instanceof StreamResetError) return err;
    if (err instanceof ResetReason) return new StreamResetError(this.id, err.resetCode, false);
    if (closed) return closed;
    // The library's own errors say nothing in `message`: wrapped, with their words.
    if (err instanceof Error && err.message !== '') return err;
    return new StreamStateError(`stream ${this.id} failed: ${quicErrorText(err)}`, { cause: err });
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterated) throw new StreamStateError(`stream ${this.id} is already being read`);
    if (!this.canRead) throw new StreamStateError(`stream ${this.id} is send-only`);
    this.iterated = true;
    if (this.direct) return this.directIterator(this.direct);
    const reader = this.stream.readable.getReader();
    return {
      next: async () => {
        try {
          const r = await reader.read();
          if (r.done) return { value: undefined, done: true };
          return { value: r.value, done: false };
        } catch (err) {
          throw this.mapError(err);
        }
      },
      return: async () => {
        // The reader left early: release the stream (quiche's window still bounds the peer).
        try {
          reader.releaseLock();
        } catch {
          // already released
        }
        return { value: undefined, done: true };
      },
    };
  }

  private directIterator(d: DirectStream): AsyncIterator<Uint8Array> {
    let done = false;
    const wait = async (): Promise<IteratorResult<Uint8Array>> => {
      try {
        for (;;) {
          await d.waitReadable();
          if (this.localReset) throw this.localReset; // reset while waiting: drained, not ours
          const chunk = d.readDirect();
          if (chunk === undefined) {
            done = true;
            return { value: undefined, done: true };
          }
          if (chunk !== null) return { value: chunk, done: false };
        }
      } catch (err) {
        throw this.mapError(err);
      }
    };
    return {
      // Bytes already in quiche are returned without waiting (and without an async frame).
      next: () => {
        if (done) return Promise.resolve({ value: undefined, done: true });
        // Reset here while the stream is drained (see `reset`): the bytes are not the reader's.
        if (this.localReset) return Promise.reject(this.localReset);
        let chunk: Uint8Array | null | undefined;
        try {
          chunk = d.readDirect();
        } catch (err) {
          return Promise.reject(this.mapError(err));
        }
        if (chunk === undefined) {
          done = true;
          return Promise.resolve({ value: undefined, done: true });
        }
        if (chunk !== null) return Promise.resolve({ value: chunk, done: false });
        return wait();
      },
      // The reader left early: quiche's window still bounds the peer, as with the readable.
      return: async () => {
        done = true;
        return { value: undefined, done: true };
      },
    };
  }

  private getWriter(): WritableStreamDefaultWriter<Uint8Array> {
    this.writer ??= this.stream.writable.getWriter();
    return this.writer;
  }

  /** Why a write cannot start now, if it cannot. */
  private writeRefusal(): Error | null {
    if (this.localReset) return this.localReset;
    if (this.peerReset) return this.peerReset;
    if (!this.canWrite) return new StreamStateError(`stream ${this.id} is receive-only`);
    if (this.ended) return new StreamStateError(`write after end on stream ${this.id}`);
    return this.host.closedError();
  }

  write(chunk: Uint8Array): Promise<void> {
    // The common case, quiche taking the whole chunk at once, costs no promise of its own.
    const d = this.direct;
    if (d !== null && this.writing === null && this.writeRefusal() === null) {
      let p: Promise<void> | undefined;
      try {
        p = d.writeDirect(chunk);
      } catch (err) {
        return Promise.reject(this.mapError(err));
      }
      if (p === undefined) return settled;
      return this.awaitWrite(p, chunk.length);
    }
    return this.writeQueued(chunk);
  }

  /** A direct write quiche is still taking, counted as buffered until it has. */
  private async awaitWrite(p: Promise<void>, length: number): Promise<void> {
    this.writing = p;
    this.host.sendBuffered(length);
    try {
      await p;
    } catch (err) {
      throw this.mapError(err);
    } finally {
      if (this.writing === p) this.writing = null;
      this.host.sendBuffered(-length);
    }
  }

  private async writeQueued(chunk: Uint8Array): Promise<void> {
    const refusal = this.writeRefusal();
    if (refusal) throw refusal;
    this.host.sendBuffered(chunk.length);
    try {
      if (this.direct) await this.writeDirect(this.direct, chunk);
      // A peer reset errors the library's writable (see onPeerReset), which rejects this too.
      else await this.getWriter().write(chunk);
    } catch (err) {
      throw this.mapError(err);
    } finally {
      this.host.sendBuffered(-chunk.length);
    }
  }

  /** In order: behind any write still waiting for capacity. */
  private async writeDirect(d: DirectStream, chunk: Uint8Array): Promise<void> {
    while (this.writing) await this.writing;
    // A reset or a closed connection while queued: fail as a write would have.
    const refusal = this.writeRefusal();
    if (refusal) throw refusal;
    const p = d.writeDirect(chunk);
    if (p === undefined) return;
    this.writing = p;
    try {
      await p;
    } finally {
      if (this.writing === p) this.writing = null;
    }
  }

  async end(): Promise<void> {
    if (this.localReset) throw this.localReset;
    if (!this.canWrite) throw new StreamStateError(`stream ${this.id} is receive-only`);
    if (this.ended) return;
    this.ended = true;
    try {
      // The FIN goes after every direct write (the writable knows nothing of them).
      while (this.writing) await this.writing;
      await this.getWriter().close();
    } catch (err) {
      throw this.mapError(err);
    }
  }

  reset(code: number): void {
    if (this.localReset) return;
    this.localReset = new StreamResetError(this.id, code >>> 0, false);
    if (!this.canWrite && this.direct !== null) {
      // A stream we only read: quiche never frees a read side shut down before the peer's end
      // or reset arrived (it is left complete but unread), and it gives the peer a stream back
      // only when it frees one. With STOP_SENDING at once, a client that left 1,024 broker
      // subscriptions on one connection could be sent no more event streams; its next
      // subscription hung. The peer's end is awaited instead, reading and discarding.
      const internals = this.stream as unknown as StreamInternals;
      internals.rejectReadableP?.(this.localReset);
      void this.drainThenStop(this.direct, code >>> 0);
      return;
    }
    this.shutDown(code >>> 0);
  }

  /**
   * Reads and discards until the peer ends or resets the stream (quiche then frees it), within
   * QUIC_RESET_DRAIN_MS_MAX and QUIC_RESET_DRAIN_BYTES_MAX; a peer still sending past them is
   * sent STOP_SENDING (the stream then stays with quiche until the connection ends).
   */
  private async drainThenStop(d: DirectStream, code: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), QUIC_RESET_DRAIN_MS_MAX);
      timer.unref?.();
    });
    let bytes = 0;
    try {
      for (;;) {
        const chunk = d.readDirect();
        if (chunk === undefined) return; // the peer's end, read: freed
        if (chunk !== null) {
          bytes += chunk.byteLength;
          if (bytes > QUIC_RESET_DRAIN_BYTES_MAX) break;
          continue;
        }
        const readable = d.waitReadable();
        readable.catch(() => undefined); // left waiting at expiry; the shutdown below rejects it
        if ((await Promise.race([readable, expired])) === 'expired') break;
      }
    } catch {
      return; // the peer's reset, read (freed), or the connection is gone: nothing to stop
    } finally {
      clearTimeout(timer);
    }
    this.shutDown(code);
  }

  /** Shuts our sides down in quiche: STOP_SENDING and/or RESET_STREAM go to the peer. */
  private shutDown(code: number): void {
    try {
      this.stream.cancel(new ResetReason(code));
    } catch {
      // the library already tore the stream down; nothing left to abort
    }
  }
}
