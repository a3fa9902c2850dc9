/**
 * What one publish batch counts against PAYLOAD_BYTES_MAX (one batch leaves as one frame): each
 * record with its length prefix, plus the stream's name and the key once. Shared by
 * `publishBatch`, which refuses a batch over the bound, and the publisher, which must never
 * gather one (its callers did not choose the batch and cannot split it).
 */

const TEXT = new TextEncoder();

/** The `u32` length each record carries in a batch. */
export const RECORD_LENGTH_BYTES = 4;

/** Bytes a batch to `stream` counts besides its records and key: the name's UTF-8 length, or,
 *  for a short name, its bound of 3 bytes per UTF-16 unit (not measured on every publish). */
export function streamNameBytes(stream: string): number {
  return stream.length * 3 > 1024 ? TEXT.encode(stream).byteLength : stream.length * 3;
}
