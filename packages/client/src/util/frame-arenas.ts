/**
 * Reusable buffers for large publish frames. A gathered frame of many records is encoded into
 * an arena and written as a view of it; the transport says when it no longer holds the bytes
 * (`TransportStream.write`'s `released`), and only then does the arena come back here for the
 * next frame. A fresh 1 MiB buffer per frame cost a page-faulting copy and garbage collection
 * driven by external memory; a reused one is already mapped. Free arenas are bounded
 * (FRAME_ARENAS_KEPT_MAX); past it, and when every arena is out, frames get fresh ones.
 */
import { FRAME_ARENA_BYTES, FRAME_ARENAS_KEPT_MAX } from '../limits.js';

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
