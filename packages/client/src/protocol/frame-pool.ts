/**
 * Buffers for large encoded frames, taken back once the stream has copied a frame out. Over QUIC
 * a write settles only after quiche copied the frame into its send buffer (the stream's
 * `copiesWrites`), so a publisher's next batch is encoded into the memory of one already written
 * instead of a new off-heap buffer: V8 counts off-heap bytes towards its next mark-compact, and
 * a pub→sub client allocated a batch's worth per batch (docs/perf.md, "QUIC pub→sub (session
 * 20)"). Over TLS the multiplexer may still hold a frame after its write resolved: no pool.
 * One pool serves every connection of the process (a new connection starts warm, and what is
 * kept is bounded once per process); take and give are synchronous, so sharing is safe.
 */
import {
  FRAME_POOL_BUFFER_BYTES_MAX,
  FRAME_POOL_BUFFER_GRAIN_BYTES,
  FRAME_POOL_BYTES_MAX,
  FRAME_POOL_FRAME_BYTES_MIN,
} from '../limits.js';

export class FramePool {
  private readonly free: ArrayBuffer[] = [];
  private freeBytes = 0;
  /** Buffers `take` handed out that `give` has not taken back (a lost frame is collected). */
  private readonly lent = new WeakSet<ArrayBuffer>();
  /** New buffers allocated, for tests and probes. */
  allocated = 0;

  /**
   * Exactly `size` bytes for an encoder, in the smallest free buffer that holds them or a new
   * one; null outside the pooled sizes (the encoder allocates as usual).
   */
  readonly take = (size: number): Uint8Array | null => {
    if (size < FRAME_POOL_FRAME_BYTES_MIN || size > FRAME_POOL_BUFFER_BYTES_MAX) return null;
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const n = this.free[i]!.byteLength;
      if (n >= size && (best < 0 || n < this.free[best]!.byteLength)) best = i;
    }
    let buf: ArrayBuffer;
    if (best >= 0) {
      buf = this.free.splice(best, 1)[0]!;
      this.freeBytes -= buf.byteLength;
    } else {
      const grains = Math.ceil(size / FRAME_POOL_BUFFER_GRAIN_BYTES);
      const bytes = Math.min(grains * FRAME_POOL_BUFFER_GRAIN_BYTES, FRAME_POOL_BUFFER_BYTES_MAX);
      // Unzeroed: the encoder writes every byte of its frame (its writer asserts so).
      buf = Buffer.allocUnsafeSlow(bytes).buffer as ArrayBuffer;
      this.allocated++;
    }
    this.lent.add(buf);
    return new Uint8Array(buf, 0, size);
  };

  /** True when `frame` lies in a buffer this pool lent and has not taken back. */
  owns(frame: Uint8Array): boolean {
    return this.lent.has(frame.buffer as ArrayBuffer);
  }

  /** Takes back the buffer of a frame nothing reads any more (else does nothing). */
  readonly give = (frame: Uint8Array): void => {
    const buf = frame.buffer as ArrayBuffer;
    if (!this.lent.has(buf)) return;
    this.lent.delete(buf);
    if (this.freeBytes + buf.byteLength > FRAME_POOL_BYTES_MAX) return;
    this.free.push(buf);
    this.freeBytes += buf.byteLength;
  };
}

/** The process's pool, for every stream that copies its writes. */
export const framePool = new FramePool();
