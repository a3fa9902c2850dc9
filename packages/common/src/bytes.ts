/**
 * Small copies of bytes, made the cheap way: a subscriber decodes hundreds of thousands of
 * events a second, and any one of them may straddle two socket reads and need a copy.
 */
import { POOLED_COPY_BYTES_MAX } from './limits.js';

const NodeBuffer = (globalThis as { Buffer?: { allocUnsafe(size: number): Uint8Array } }).Buffer;

/**
 * `size` bytes of memory of their own, unzeroed when small: the caller must fill every byte.
 * A fresh `ArrayBuffer` costs 330–800 ns for 65 B–1 KiB on the project's machine, so where the
 * runtime has Node's Buffer a small one is carved from its shared pool. The result is still a
 * plain `Uint8Array` of exactly `size` bytes; one a caller keeps pins its 8 KiB pool slab, as
 * any small Node Buffer does.
 */
export function ownBytes(size: number): Uint8Array {
  if (size > POOLED_COPY_BYTES_MAX || NodeBuffer === undefined) return new Uint8Array(size);
  const b = NodeBuffer.allocUnsafe(size);
  return new Uint8Array(b.buffer, b.byteOffset, size);
}

/**
 * A copy of `view` in an allocation of its own, whatever the view's class: a Node Buffer's
 * `slice()` is a view of the same memory, not a copy, so bytes that are kept are copied here.
 */
export function copyBytes(view: Uint8Array): Uint8Array {
  return new Uint8Array(view);
}
