/**
 * A view of bytes [from, to) of `bytes` (shared memory, like `subarray`), built with the
 * Uint8Array constructor: `subarray` on a socket's Buffer goes through the species constructor
 * and makes another Buffer at about three times the cost, paid per frame on the read path.
 * Callers pass checked bounds. (@felix/wire has the same helper; the transport sits below it.)
 */
export function viewOf(bytes: Uint8Array, from: number, to: number): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset + from, to - from);
}
