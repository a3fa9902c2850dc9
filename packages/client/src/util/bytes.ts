/**
 * Byte views as the client takes them: a Uint8Array (a Buffer is one), also one made in another
 * realm (a vm sandbox, a test runner's environment), where `instanceof Uint8Array` is false.
 */
import { notBytes } from '../errors.js';

/** A view of single bytes (Uint8Array, Int8Array, Uint8ClampedArray), from any realm. */
export function isByteView(data: unknown): data is Uint8Array {
  return (
    ArrayBuffer.isView(data) && (data as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT === 1
  );
}

/** `data` as a Uint8Array of the same bytes (no copy), or InvalidArgumentError naming
 *  `argument`. */
export function asBytes(data: unknown, argument?: string): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (!isByteView(data)) throw notBytes(data, argument);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

const UTF8 = new TextEncoder();

/** Whether `s` is more than `max` bytes in UTF-8 (encoded only when its length cannot tell). */
export function utf8Over(s: string, max: number): boolean {
  return s.length * 3 > max && UTF8.encode(s).byteLength > max;
}
