/**
 * CRC-32 (IEEE) over a byte range, as the segment format uses it. Node's zlib.crc32 is fast
 * for long runs but needs a view per call; the pure table code from @felix/common needs none,
 * so short ranges (record headers, small bodies) use it and long ones go native.
 */
import * as zlib from 'node:zlib';
import { crc32 as pureCrc32 } from '@felix/common';

type NativeCrc32 = (data: Uint8Array, value?: number) => number;
const native: NativeCrc32 | undefined = (zlib as unknown as { crc32?: NativeCrc32 }).crc32;

/** Below this many bytes the pure code beats creating a view for the native call. */
const NATIVE_CRC_MIN_BYTES = 128;

/** Continues `crc` (0 to start) over `bytes[start, end)`. */
export function crc32Range(bytes: Uint8Array, crc: number, start: number, end: number): number {
  if (native !== undefined && end - start >= NATIVE_CRC_MIN_BYTES) {
    return native(bytes.subarray(start, end), crc);
  }
  return pureCrc32(bytes, crc, start, end);
}
