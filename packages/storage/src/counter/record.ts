/**
 * The counter record payload (wire-storage §3.7), little-endian, exact length 14 + key_len:
 * u8 version (1), u8 op (0 delta, 1 checkpoint), i64 value, u32 key_len, key (UTF-8).
 * Pure codec; lengths are checked against the bound and the bytes present before slicing.
 */
import { decodeKey, encodeKey } from '../cache/record.js';
import { CounterRecordCorruptError, ProjectionInputError } from '../errors.js';
import { PROJECTION_KEY_BYTES_MAX } from '../limits.js';

export const COUNTER_RECORD_VERSION = 1;
export const COUNTER_OP_DELTA = 0;
export const COUNTER_OP_CHECKPOINT = 1;
export const COUNTER_RECORD_HEADER_BYTES = 14;
export const I64_MIN = -(2n ** 63n);
export const I64_MAX = 2n ** 63n - 1n;

export interface CounterRecord {
  op: 'delta' | 'checkpoint';
  key: string;
  /** The delta, or the folded sum for a checkpoint; always within i64. */
  value: bigint;
}

export function encodeCounterRecord(rec: CounterRecord): Uint8Array {
  const key = encodeKey(rec.key);
  if (rec.value < I64_MIN || rec.value > I64_MAX) {
    throw new ProjectionInputError(`counter value ${rec.value} is outside i64`);
  }
  const out = new Uint8Array(COUNTER_RECORD_HEADER_BYTES + key.length);
  const view = new DataView(out.buffer);
  out[0] = COUNTER_RECORD_VERSION;
  out[1] = rec.op === 'delta' ? COUNTER_OP_DELTA : COUNTER_OP_CHECKPOINT;
  view.setBigInt64(2, rec.value, true);
  view.setUint32(10, key.length, true);
  out.set(key, COUNTER_RECORD_HEADER_BYTES);
  return out;
}

/** Decodes one counter record payload; anything malformed is a `CounterRecordCorruptError`. */
export function decodeCounterRecord(bytes: Uint8Array, offset?: number): CounterRecord {
  const fail = (reason: string): never => {
    throw new CounterRecordCorruptError(reason, offset);
  };
  if (bytes.length < COUNTER_RECORD_HEADER_BYTES) {
    fail(`payload of ${bytes.length} bytes is shorter than the header`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== COUNTER_RECORD_VERSION) fail(`unknown record version ${bytes[0]}`);
  const opByte = bytes[1];
  if (opByte !== COUNTER_OP_DELTA && opByte !== COUNTER_OP_CHECKPOINT) fail(`unknown op ${opByte}`);
  const value = view.getBigInt64(2, true);
  const keyLen = view.getUint32(10, true);
  if (keyLen > PROJECTION_KEY_BYTES_MAX)
    fail(`key_len ${keyLen} exceeds ${PROJECTION_KEY_BYTES_MAX}`);
  if (bytes.length !== COUNTER_RECORD_HEADER_BYTES + keyLen) {
    fail(`length ${bytes.length} is not the exact ${COUNTER_RECORD_HEADER_BYTES + keyLen}`);
  }
  let key = '';
  try {
    key = decodeKey(bytes.subarray(COUNTER_RECORD_HEADER_BYTES));
  } catch {
    fail('key is not valid UTF-8');
  }
  return { op: opByte === COUNTER_OP_DELTA ? 'delta' : 'checkpoint', key, value };
}
