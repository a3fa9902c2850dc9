/**
 * The cache record payload (wire-storage §3.7), little-endian, 14-byte header:
 * u8 version (1 normal, 2 carried version), u8 op (0 put, 1 delete), u64 expires_at_millis,
 * u32 key_len, [u64 version when the version byte is 2], key (UTF-8), value = rest.
 * Pure codec: no I/O, and every length is checked against the bytes present and the named
 * bound before anything is sliced or allocated.
 */
import { CacheRecordCorruptError, ProjectionInputError } from '../errors.js';
import { CACHE_VALUE_BYTES_MAX, PROJECTION_KEY_BYTES_MAX } from '../limits.js';

export const CACHE_RECORD_VERSION_NORMAL = 1;
export const CACHE_RECORD_VERSION_CARRIED = 2;
export const CACHE_OP_PUT = 0;
export const CACHE_OP_DELETE = 1;
export const CACHE_RECORD_HEADER_BYTES = 14;

export interface CacheRecord {
  op: 'put' | 'delete';
  key: string;
  /** Absolute Unix milliseconds; 0 = never (always 0 for deletes). */
  expiresAtMillis: number;
  /** Empty for deletes. A view into the decoded bytes, not a copy. */
  value: Uint8Array;
  /** Present only on compaction copies (record version 2): the offset of the original put. */
  carriedVersion?: number;
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** Short ASCII keys are built directly: TextDecoder's per-call cost dominates index replay. */
const ASCII_FAST_PATH_BYTES_MAX = 64;

/** Decodes key bytes as strict UTF-8; throws TypeError on invalid input (callers map it). */
export function decodeKey(bytes: Uint8Array): string {
  if (bytes.length <= ASCII_FAST_PATH_BYTES_MAX) {
    let ascii = true;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  return utf8Decoder.decode(bytes);
}

/** Refuses a key `encodeKey` refuses, without encoding one whose length alone shows it fits
 *  (a UTF-16 unit is at most 3 UTF-8 bytes): a put in memory keeps the string, not its bytes. */
export function checkKeyBytes(key: string): void {
  if (key.length * 3 > PROJECTION_KEY_BYTES_MAX) encodeKey(key);
}

/** Encodes a key as UTF-8, refusing keys outside the bound. */
export function encodeKey(key: string): Uint8Array {
  const bytes = utf8Encoder.encode(key);
  if (bytes.length > PROJECTION_KEY_BYTES_MAX) {
    throw new ProjectionInputError(
      `key of ${bytes.length} bytes exceeds ${PROJECTION_KEY_BYTES_MAX}`,
    );
  }
  return bytes;
}

export function encodeCacheRecord(rec: CacheRecord): Uint8Array {
  const key = encodeKey(rec.key);
  const carried = rec.carriedVersion !== undefined;
  if (rec.op === 'delete' && (carried || rec.value.length > 0 || rec.expiresAtMillis !== 0)) {
    throw new ProjectionInputError('a delete carries no value, expiry or version');
  }
  if (rec.value.length > CACHE_VALUE_BYTES_MAX) {
    throw new ProjectionInputError(
      `value of ${rec.value.length} bytes exceeds ${CACHE_VALUE_BYTES_MAX}`,
    );
  }
  if (!Number.isSafeInteger(rec.expiresAtMillis) || rec.expiresAtMillis < 0) {
    throw new ProjectionInputError(
      `expiry ${rec.expiresAtMillis} is not a non-negative safe integer`,
    );
  }
  const head = CACHE_RECORD_HEADER_BYTES + (carried ? 8 : 0);
  const out = new Uint8Array(head + key.length + rec.value.length);
  const view = new DataView(out.buffer);
  out[0] = carried ? CACHE_RECORD_VERSION_CARRIED : CACHE_RECORD_VERSION_NORMAL;
  out[1] = rec.op === 'put' ? CACHE_OP_PUT : CACHE_OP_DELETE;
  view.setBigUint64(2, BigInt(rec.expiresAtMillis), true);
  view.setUint32(10, key.length, true);
  if (carried) {
    const v = rec.carriedVersion as number;
    if (!Number.isSafeInteger(v) || v < 0)
      throw new ProjectionInputError(`bad carried version ${v}`);
    view.setBigUint64(14, BigInt(v), true);
  }
  out.set(key, head);
  out.set(rec.value, head + key.length);
  return out;
}

/** Decodes one cache record payload; anything malformed is a `CacheRecordCorruptError`. */
export function decodeCacheRecord(bytes: Uint8Array, offset?: number): CacheRecord {
  const fail = (reason: string): never => {
    throw new CacheRecordCorruptError(reason, offset);
  };
  if (bytes.length < CACHE_RECORD_HEADER_BYTES) {
    fail(
      `payload of ${bytes.length} bytes is shorter than the ${CACHE_RECORD_HEADER_BYTES}-byte header`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = bytes[0]!;
  const opByte = bytes[1]!;
  if (version !== CACHE_RECORD_VERSION_NORMAL && version !== CACHE_RECORD_VERSION_CARRIED) {
    fail(`unknown record version ${version}`);
  }
  if (opByte !== CACHE_OP_PUT && opByte !== CACHE_OP_DELETE) fail(`unknown op ${opByte}`);
  const expires = view.getBigUint64(2, true);
  if (expires > BigInt(Number.MAX_SAFE_INTEGER)) fail(`expiry ${expires} exceeds 2^53-1`);
  const keyLen = view.getUint32(10, true);
  if (keyLen > PROJECTION_KEY_BYTES_MAX)
    fail(`key_len ${keyLen} exceeds ${PROJECTION_KEY_BYTES_MAX}`);
  let pos = CACHE_RECORD_HEADER_BYTES;
  let carriedVersion: number | undefined;
  if (version === CACHE_RECORD_VERSION_CARRIED) {
    if (opByte === CACHE_OP_DELETE) fail('a delete cannot carry a version');
    if (bytes.length < pos + 8) fail('payload ends inside the carried version');
    const v = view.getBigUint64(pos, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`carried version ${v} exceeds 2^53-1`);
    carriedVersion = Number(v);
    pos += 8;
  }
  if (bytes.length - pos < keyLen)
    fail(`key_len ${keyLen} exceeds the ${bytes.length - pos} bytes left`);
  let key = '';
  try {
    key = decodeKey(bytes.subarray(pos, pos + keyLen));
  } catch {
    fail('key is not valid UTF-8');
  }
  pos += keyLen;
  const value = bytes.subarray(pos);
  const op = opByte === CACHE_OP_PUT ? 'put' : 'delete';
  if (op === 'delete' && (value.length > 0 || expires !== 0n))
    fail('a delete carries a value or expiry');
  if (value.length > CACHE_VALUE_BYTES_MAX)
    fail(`value of ${value.length} bytes exceeds the bound`);
  const rec: CacheRecord = { op, key, expiresAtMillis: Number(expires), value };
  if (carriedVersion !== undefined) rec.carriedVersion = carriedVersion;
  return rec;
}
