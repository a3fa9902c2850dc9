/**
 * The byte format of one segment file (reference §3.3–3.4): the 32-byte segment header and
 * the 28-byte record header with its optional producer tag and publisher trailer. Pure: no
 * I/O. Every length read from disk is checked against its bound before anything is sliced.
 * All integers are big-endian; u64 fields are split into two u32 halves so no BigInt is made
 * on the hot path.
 */
import type { CorruptionKind } from '../errors.js';
import { RECORD_PAYLOAD_BYTES_MAX } from '../limits.js';
import { crc32Range } from './checksum.js';

export const SEGMENT_MAGIC = 0x464c5347; // "FLSG"
export const SEGMENT_HEADER_BYTES = 32;
/** Version this implementation writes: plain records and producer marks only. */
export const SEGMENT_VERSION_WRITTEN = 3;
export const SEGMENT_VERSION_MIN_READ = 2;
export const SEGMENT_VERSION_MAX_READ = 6;

export const RECORD_HEADER_BYTES = 28;
export const PRODUCER_TAG_BYTES = 20;

/** Flag bits in the high bits of `payload_len`. */
export const FLAG_BATCH_OPEN = 0x8000_0000;
export const FLAG_BATCH_CONTINUE = 0x4000_0000;
export const FLAG_GENERATION_START = 0x2000_0000;
export const FLAG_COMMIT = 0x1000_0000;
export const FLAG_PUBLISHER = 0x0800_0000;
export const RECORD_FLAGS_MASK = 0xf800_0000;
export const RECORD_LENGTH_MASK = 0x07ff_ffff;
/** Bits 28..31: at most one may be set. */
const EXCLUSIVE_FLAGS_MASK = 0xf000_0000;

const TWO_32 = 0x1_0000_0000;
/** High half of the largest safe integer: a u64 above this does not fit a JS number. */
const SAFE_HIGH_MAX = 0x1f_ffff;

export interface SegmentHeader {
  version: number;
  baseOffset: number;
  createdAtMicros: number;
}

export interface HeaderVerdict {
  kind: CorruptionKind;
  detail: string;
  /** Byte position of the faulty field inside the header. */
  position: number;
}

export function writeU64(view: DataView, pos: number, value: number): void {
  view.setUint32(pos, Math.floor(value / TWO_32));
  view.setUint32(pos + 4, value >>> 0);
}

/** Reads a u64 as a number; returns -1 when it exceeds the safe-integer range. */
export function readU64(view: DataView, pos: number): number {
  const hi = view.getUint32(pos);
  if (hi > SAFE_HIGH_MAX) return -1;
  return hi * TWO_32 + view.getUint32(pos + 4);
}

/** The body of a generation-start record (docs/storage-format.md): the u64 big-endian
 *  generation. */
export function encodeGenerationStartBody(generation: number): Uint8Array {
  const body = new Uint8Array(8);
  writeU64(viewOf(body), 0, generation);
  return body;
}

/** The generation a generation-start record's body names, or undefined when it is none (a
 *  peer's bytes: any length, any value). */
export function decodeGenerationStartBody(body: Uint8Array): number | undefined {
  if (body.length !== 8) return undefined;
  const g = readU64(viewOf(body), 0);
  return g > 0 ? g : undefined;
}

export function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The 32 header bytes for a new segment. */
export function encodeSegmentHeader(h: {
  baseOffset: number;
  createdAtMicros: number;
  version?: number;
}): Uint8Array {
  const out = new Uint8Array(SEGMENT_HEADER_BYTES);
  const v = viewOf(out);
  v.setUint32(0, SEGMENT_MAGIC);
  v.setUint16(4, h.version ?? SEGMENT_VERSION_WRITTEN);
  v.setUint16(6, 0);
  writeU64(v, 8, h.baseOffset);
  writeU64(v, 16, h.createdAtMicros);
  v.setUint32(24, crc32Range(out, 0, 0, 24));
  v.setUint32(28, 0);
  return out;
}

/** Decodes a segment header, or names what is wrong with it. */
export function decodeSegmentHeader(bytes: Uint8Array): SegmentHeader | HeaderVerdict {
  if (bytes.length < SEGMENT_HEADER_BYTES) {
    return {
      kind: 'Truncated',
      detail: `needed ${SEGMENT_HEADER_BYTES} header bytes, available ${bytes.length}`,
      position: 0,
    };
  }
  const v = viewOf(bytes);
  const magic = v.getUint32(0);
  if (magic !== SEGMENT_MAGIC) {
    return { kind: 'SegmentMagic', detail: `magic 0x${magic.toString(16)}`, position: 0 };
  }
  const stored = v.getUint32(24);
  const computed = crc32Range(bytes, 0, 0, 24);
  if (stored !== computed) {
    return {
      kind: 'SegmentHeaderChecksum',
      detail: `stored 0x${stored.toString(16)}, computed 0x${computed.toString(16)}`,
      position: 24,
    };
  }
  const version = v.getUint16(4);
  if (version < SEGMENT_VERSION_MIN_READ || version > SEGMENT_VERSION_MAX_READ) {
    return { kind: 'SegmentVersion', detail: `version ${version}`, position: 4 };
  }
  const flags = v.getUint16(6);
  if (flags !== 0)
    return { kind: 'SegmentFlags', detail: `flags 0x${flags.toString(16)}`, position: 6 };
  const baseOffset = readU64(v, 8);
  if (baseOffset < 0)
    return { kind: 'OffsetTooLarge', detail: 'base offset beyond 2^53', position: 8 };
  const created = readU64(v, 16);
  return { version, baseOffset, createdAtMicros: created < 0 ? Number.MAX_SAFE_INTEGER : created };
}

export function isHeaderVerdict(h: SegmentHeader | HeaderVerdict): h is HeaderVerdict {
  return (h as HeaderVerdict).kind !== undefined;
}

/** Lowest segment version allowed to hold a record with these flags. */
function versionNeeded(flags: number): number {
  if (flags & FLAG_PUBLISHER) return 6;
  if (flags & FLAG_COMMIT) return 5;
  if (flags & FLAG_GENERATION_START) return 4;
  if (flags & (FLAG_BATCH_OPEN | FLAG_BATCH_CONTINUE)) return 3;
  return 2;
}

/** Result of looking at the record that starts at a position (filled in place, no allocation). */
export class RecordHead {
  /** Record flags (the high five bits of `payload_len`, in place). */
  flags = 0;
  /** Body length: payload plus publisher trailer. */
  bodyLength = 0;
  offset = 0;
  timestampMicros = 0;
  /** Header + tag + body. */
  totalBytes = 0;
  /** Where the body starts, relative to the record start. */
  bodyStart = 0;
}

export const HEAD_OK = 0;
/** The buffer ends before the header (or the whole record) does. */
export const HEAD_SHORT = 1;

/**
 * Checks the record header at `pos` (header CRC first, so the length is trusted only when
 * intact) and fills `out`. Returns HEAD_OK, HEAD_SHORT when the bytes end first, or the
 * corruption kind. Does not look at the body.
 */
export function readRecordHead(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  end: number,
  segmentVersion: number,
  out: RecordHead,
): typeof HEAD_OK | typeof HEAD_SHORT | CorruptionKind {
  if (end - pos < RECORD_HEADER_BYTES) return HEAD_SHORT;
  const stored = view.getUint32(pos + 20);
  if (crc32Range(bytes, 0, pos, pos + 20) !== stored) return 'RecordHeaderChecksum';
  const word = view.getUint32(pos);
  const flags = (word & RECORD_FLAGS_MASK) >>> 0;
  const exclusive = flags & EXCLUSIVE_FLAGS_MASK;
  if ((exclusive & (exclusive - 1)) !== 0) return 'RecordFlags';
  if (versionNeeded(flags) > segmentVersion) return 'RecordFlags';
  const bodyLength = word & RECORD_LENGTH_MASK;
  if (bodyLength > RECORD_PAYLOAD_BYTES_MAX) return 'RecordTooLarge';
  const offset = readU64(view, pos + 4);
  if (offset < 0) return 'OffsetTooLarge';
  const ts = readU64(view, pos + 12);
  out.flags = flags;
  out.bodyLength = bodyLength;
  out.offset = offset;
  out.timestampMicros = ts < 0 ? Number.MAX_SAFE_INTEGER : ts;
  out.bodyStart = RECORD_HEADER_BYTES + (flags & FLAG_BATCH_OPEN ? PRODUCER_TAG_BYTES : 0);
  out.totalBytes = out.bodyStart + bodyLength;
  return HEAD_OK;
}

/** Checks the record checksum (header bytes 0..24, then tag and body); the record is in `bytes`. */
export function recordChecksumOk(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  head: RecordHead,
): boolean {
  let c = crc32Range(bytes, 0, pos, pos + 24);
  c = crc32Range(bytes, c, pos + RECORD_HEADER_BYTES, pos + head.totalBytes);
  return c === view.getUint32(pos + 24);
}

/** Publisher trailer length of a verified record with FLAG_PUBLISHER, or -1 when it lies. */
export function publisherLength(bytes: Uint8Array, pos: number, head: RecordHead): number {
  if (head.bodyLength < 1) return -1;
  const m = bytes[pos + head.totalBytes - 1]!;
  return m + 1 > head.bodyLength ? -1 : m;
}

export interface ProducerTag {
  producerId: bigint;
  sequence: bigint;
  /** Records in the producer batch this record opens. */
  count: number;
}

export interface EncodeRecordOptions {
  flags?: number;
  tag?: ProducerTag;
  publisher?: Uint8Array;
}

/** Bytes one record takes on disk. */
export function recordBytes(payloadLength: number, opts?: EncodeRecordOptions): number {
  const tag = opts?.tag !== undefined ? PRODUCER_TAG_BYTES : 0;
  const pub = opts?.publisher !== undefined ? opts.publisher.length + 1 : 0;
  return RECORD_HEADER_BYTES + tag + payloadLength + pub;
}

/**
 * Writes one record at `pos` in `out` and returns the position after it. The hot path (plain
 * records) passes no options.
 */
export function encodeRecordInto(
  out: Uint8Array,
  view: DataView,
  pos: number,
  offset: number,
  timestampMicros: number,
  payload: Uint8Array,
  opts?: EncodeRecordOptions,
): number {
  let flags = opts?.flags ?? 0;
  let body = RECORD_HEADER_BYTES;
  if (opts?.tag !== undefined) {
    flags |= FLAG_BATCH_OPEN;
    view.setBigUint64(pos + 28, opts.tag.producerId);
    view.setBigUint64(pos + 36, opts.tag.sequence);
    view.setUint32(pos + 44, opts.tag.count);
    body += PRODUCER_TAG_BYTES;
  }
  let bodyLength = payload.length;
  out.set(payload, pos + body);
  if (opts?.publisher !== undefined) {
    flags |= FLAG_PUBLISHER;
    const p = opts.publisher;
    out.set(p, pos + body + payload.length);
    out[pos + body + payload.length + p.length] = p.length;
    bodyLength += p.length + 1;
  }
  view.setUint32(pos, (flags | bodyLength) >>> 0);
  writeU64(view, pos + 4, offset);
  writeU64(view, pos + 12, timestampMicros);
  view.setUint32(pos + 20, crc32Range(out, 0, pos, pos + 20));
  let c = crc32Range(out, 0, pos, pos + 24);
  c = crc32Range(out, c, pos + RECORD_HEADER_BYTES, pos + body + bodyLength);
  view.setUint32(pos + 24, c);
  return pos + body + bodyLength;
}

/** One record as a standalone byte string (tests, tools). */
export function encodeRecord(
  offset: number,
  timestampMicros: number,
  payload: Uint8Array,
  opts?: EncodeRecordOptions,
): Uint8Array {
  const out = new Uint8Array(recordBytes(payload.length, opts));
  encodeRecordInto(out, viewOf(out), 0, offset, timestampMicros, payload, opts);
  return out;
}

/** A commit record's body: the event plus the key changes it applies atomically. */
export interface CommitBody {
  event: Uint8Array;
  ops: Array<{ op: 'put'; key: Uint8Array; value: Uint8Array } | { op: 'delete'; key: Uint8Array }>;
}

/** Parses a commit-record payload (reference §3.4); null when it is malformed. */
export function decodeCommitBody(body: Uint8Array): CommitBody | null {
  const v = viewOf(body);
  let p = 0;
  const need = (n: number) => p + n <= body.length;
  if (!need(5) || body[0] !== 1) return null;
  p = 1;
  const eventLength = v.getUint32(p);
  p += 4;
  if (!need(eventLength)) return null;
  const event = body.subarray(p, p + eventLength);
  p += eventLength;
  if (!need(4)) return null;
  const count = v.getUint32(p);
  p += 4;
  // Each op takes at least 5 bytes: check before allocating anything per op.
  if (count > (body.length - p) / 5) return null;
  const ops: CommitBody['ops'] = [];
  for (let i = 0; i < count; i++) {
    if (!need(5)) return null;
    const op = body[p]!;
    const keyLength = v.getUint32(p + 1);
    p += 5;
    if (op > 1 || !need(keyLength)) return null;
    const key = body.subarray(p, p + keyLength);
    p += keyLength;
    if (op === 1) {
      ops.push({ op: 'delete', key });
      continue;
    }
    if (!need(4)) return null;
    const valueLength = v.getUint32(p);
    p += 4;
    if (!need(valueLength)) return null;
    ops.push({ op: 'put', key, value: body.subarray(p, p + valueLength) });
    p += valueLength;
  }
  return p === body.length ? { event, ops } : null;
}
