/**
 * Free buffers of one size kept for the next connection. A TLS connection's read region and
 * write slab lived until V8 collected the connection, so churn freed them into the allocator in
 * bulk, long after the connection ended; from the pool the next connection reuses them at once.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  /** Buffers handed out and not given back (a handed-off region is never given back). */
  out = 0;
  /** Buffers this pool ever allocated. */
  allocated = 0;

  constructor(
    readonly bytes: number,
    private readonly keepMax: number,
  ) {}

  /** A buffer of `bytes`, its contents unspecified. */
  take(): Buffer {
    this.out++;
    const b = this.free.pop();
    if (b !== undefined) return b;
    this.allocated++;
    return Buffer.allocUnsafeSlow(this.bytes);
  }

  /** Gives back a buffer nothing else references any more. */
  give(b: Buffer): void {
    this.out--;
    if (this.free.length < this.keepMax && b.length === this.bytes) this.free.push(b);
  }

  /** Counts a taken buffer as kept by its new owner, never to be given back. */
  forget(): void {
    this.out--;
  }
}
