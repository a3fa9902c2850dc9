/**
 * Reusable buffers for large publish frames. A gathered frame of many records is encoded into
 * an arena and written as a view of it; the transport says when it no longer holds the bytes
 * (`TransportStream.write`'s `released`), and only then does the arena come back here for the
 * next frame. A fresh 1 MiB buffer per frame cost a page-faulting copy and garbage collection
 * driven by external memory; a reused one is already mapped. Free arenas are bounded
 * (FRAME_ARENAS_KEPT_MAX); past it, and when every arena is out, frames get fresh ones.
 */
import {
  FRAME_ARENA_BYTES,
  FRAME_ARENA_RECORD_BYTES_MIN,
  FRAME_ARENAS_KEPT_MAX,
} from '../limits.js';

export class FrameArenas {
  private readonly free: Uint8Array[] = [];

  constructor(
    readonly arenaBytes: number = FRAME_ARENA_BYTES,
    readonly keptMax: number = FRAME_ARENAS_KEPT_MAX,
  ) {}

  /** Free arenas held now (at most `keptMax`). */
  get kept(): number {
    return this.free.length;
  }

  /** A free arena, or a fresh one when none is free (never zeroed: the encoder fills it). */
  take(): Uint8Array {
    return this.free.pop() ?? new Uint8Array(Buffer.allocUnsafeSlow(this.arenaBytes).buffer);
  }

  /** Gives back an arena nothing refers to any more (the transport released it). */
  give(arena: Uint8Array): void {
    if (this.free.length < this.keptMax && arena.byteLength === this.arenaBytes)
      this.free.push(arena);
  }
}

/** The arenas every client of the process shares. */
export const frameArenas = new FrameArenas();

const EMPTY = new Uint8Array(0);
/** A frame growing below FRAME_ARENA_RECORD_BYTES_MIN doubles from at least this. */
const GROWN_BYTES_MIN = 4096;

/**
 * A publish frame built as its records come: room for the head first, then each record
 * (`{u32 len, bytes}`) copied in when it is published, so a caller may reuse its buffer once
 * publish() returned. A small frame grows in buffers of its own; past
 * FRAME_ARENA_RECORD_BYTES_MIN it moves into an arena (one copy of what it had), which goes
 * back to `arenas` through `release()` once the frame is written.
 */
export class FrameBuilder {
  private buf: Uint8Array = EMPTY;
  private fromArena = false;
  private at: number;
  count = 0;

  constructor(
    private readonly arenas: FrameArenas,
    readonly headBytes: number,
    /** The most record bytes (lengths included) the frame may come to hold. */
    private readonly recordsBytesMax: number,
  ) {
    this.at = headBytes;
  }

  /** Copies `payloads` (`bytes` together) in after the records so far. */
  append(payloads: readonly Uint8Array[], bytes: number): void {
    const need = this.at + bytes + 4 * payloads.length;
    if (need > this.buf.byteLength) this.grow(need);
    const buf = this.buf;
    let at = this.at;
    for (const p of payloads) {
      const n = p.byteLength;
      buf[at] = n >>> 24;
      buf[at + 1] = (n >>> 16) & 0xff;
      buf[at + 2] = (n >>> 8) & 0xff;
      buf[at + 3] = n & 0xff;
      buf.set(p, at + 4);
      at += 4 + n;
    }
    this.at = at;
    this.count += payloads.length;
  }

  /** The frame so far: its head's room (for writePublishBatchHead), then the records. */
  frame(): Uint8Array {
    return this.buf.subarray(0, this.at);
  }

  /** Gives the arena back once nothing refers to the frame; undefined: not an arena. */
  release(): (() => void) | undefined {
    if (!this.fromArena) return undefined;
    const { arenas, buf } = this;
    return () => arenas.give(buf);
  }

  private grow(need: number): void {
    const arenas = this.arenas;
    let next: Uint8Array;
    let fromArena = false;
    if (need - this.headBytes < FRAME_ARENA_RECORD_BYTES_MIN) {
      // The first record gets an exact fit (a lone publish); later ones double it.
      const doubled =
        this.buf === EMPTY ? need : Math.max(2 * this.buf.byteLength, GROWN_BYTES_MIN);
      next = new Uint8Array(Math.max(need, doubled));
    } else if (need <= arenas.arenaBytes) {
      next = arenas.take();
      fromArena = true;
    } else {
      const most = this.headBytes + this.recordsBytesMax;
      next = new Uint8Array(Buffer.allocUnsafeSlow(Math.max(need, most)).buffer);
    }
    next.set(this.buf.subarray(this.headBytes, this.at), this.headBytes);
    if (this.fromArena) arenas.give(this.buf); // never written: nothing else holds it
    this.buf = next;
    this.fromArena = fromArena;
  }
}
