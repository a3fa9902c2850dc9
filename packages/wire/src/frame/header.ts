/**
 * The 12-byte FLX1 frame header (magic, version, flags, length; big-endian) and whole-frame
 * encode/decode. Everything a receiver must refuse (wrong magic or version, an unknown or
 * undefined flag combination, a length over the maximum) is detected from the header
 * alone, before a body byte is buffered.
 */
import {
  BadMagicError,
  FieldRangeError,
  FrameTooLargeError,
  UnsupportedVersionError,
} from '../errors.js';
import { TrailingBytesError, TruncatedError } from '../errors.js';
import { frameLayout } from '../flags.js';
import {
  FRAME_HEADER_BYTES,
  FRAME_PAYLOAD_BYTES_LIMIT,
  FRAME_PAYLOAD_BYTES_MAX_DEFAULT,
} from '../limits.js';

/** "FLX1". */
export const FRAME_MAGIC = 0x464c5831;
/** Never bumped: capabilities are negotiated instead. */
export const FRAME_VERSION = 1;

export interface FrameHeader {
  flags: number;
  length: number;
}

/** One decoded frame. `payload` may be a view into the bytes it was decoded from. */
export interface Frame {
  flags: number;
  payload: Uint8Array;
}

/** Writes a header into `target` at `offset`. */
export function writeFrameHeader(
  target: Uint8Array,
  offset: number,
  flags: number,
  length: number,
): void {
  if (!Number.isInteger(flags) || flags < 0 || flags > 0xffff) {
    throw new FieldRangeError('frame flags', `must be a u16, got ${flags}`);
  }
  if (!Number.isInteger(length) || length < 0 || length > FRAME_PAYLOAD_BYTES_LIMIT) {
    throw new FrameTooLargeError(length, FRAME_PAYLOAD_BYTES_LIMIT);
  }
  if (target.length - offset < FRAME_HEADER_BYTES) {
    throw new RangeError(`a frame header needs ${FRAME_HEADER_BYTES} bytes at offset ${offset}`);
  }
  // Byte stores, not a DataView: this runs for every frame encoded.
  const o = offset;
  target[o] = FRAME_MAGIC >>> 24;
  target[o + 1] = (FRAME_MAGIC >>> 16) & 0xff;
  target[o + 2] = (FRAME_MAGIC >>> 8) & 0xff;
  target[o + 3] = FRAME_MAGIC & 0xff;
  target[o + 4] = FRAME_VERSION >>> 8;
  target[o + 5] = FRAME_VERSION & 0xff;
  target[o + 6] = flags >>> 8;
  target[o + 7] = flags & 0xff;
  target[o + 8] = length >>> 24;
  target[o + 9] = (length >>> 16) & 0xff;
  target[o + 10] = (length >>> 8) & 0xff;
  target[o + 11] = length & 0xff;
}

/** A complete frame: header followed by a copy of `payload`. */
export function encodeFrame(flags: number, payload: Uint8Array): Uint8Array {
  frameLayout(flags);
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  writeFrameHeader(out, 0, flags, payload.length);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/**
 * Reads and validates a header from the first 12 bytes of `bytes` (from `offset`).
 * Throws the typed error for a bad magic, version, flags or length.
 */
export function decodeFrameHeader(
  bytes: Uint8Array,
  offset = 0,
  maxPayloadBytes = FRAME_PAYLOAD_BYTES_MAX_DEFAULT,
): FrameHeader {
  if (bytes.length - offset < FRAME_HEADER_BYTES) {
    throw new TruncatedError('frame header', offset, FRAME_HEADER_BYTES, bytes.length - offset);
  }
  // Byte arithmetic, not a DataView: this runs for every frame either side reads.
  const o = offset;
  const magic =
    ((bytes[o]! << 24) | (bytes[o + 1]! << 16) | (bytes[o + 2]! << 8) | bytes[o + 3]!) >>> 0;
  if (magic !== FRAME_MAGIC) throw new BadMagicError(magic, FRAME_MAGIC);
  const version = (bytes[o + 4]! << 8) | bytes[o + 5]!;
  if (version !== FRAME_VERSION) throw new UnsupportedVersionError(version);
  const flags = (bytes[o + 6]! << 8) | bytes[o + 7]!;
  frameLayout(flags);
  const length =
    ((bytes[o + 8]! << 24) | (bytes[o + 9]! << 16) | (bytes[o + 10]! << 8) | bytes[o + 11]!) >>> 0;
  if (length > maxPayloadBytes) throw new FrameTooLargeError(length, maxPayloadBytes);
  return { flags, length };
}

/** Decodes exactly one frame occupying all of `bytes`; the payload is a view. */
export function decodeFrame(
  bytes: Uint8Array,
  maxPayloadBytes = FRAME_PAYLOAD_BYTES_MAX_DEFAULT,
): Frame {
  const { flags, length } = decodeFrameHeader(bytes, 0, maxPayloadBytes);
  const available = bytes.length - FRAME_HEADER_BYTES;
  if (available < length)
    throw new TruncatedError('frame payload', FRAME_HEADER_BYTES, length, available);
  if (available > length) throw new TrailingBytesError('frame', available - length);
  return { flags, payload: bytes.subarray(FRAME_HEADER_BYTES) };
}
