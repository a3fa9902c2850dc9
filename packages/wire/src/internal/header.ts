/**
 * The broker-internal FLXI frame header: `u32 magic | u16 version (1) | u16 kind |
 * u32 length`, then the body. A wrong magic or version is fatal to the connection; a length
 * over `INTERNAL_BODY_BYTES_MAX` is refused from the header; an unknown kind is not an error
 * here (the body decoder answers it as `Unknown` so the receiver can refuse and carry on).
 */
import {
  BadMagicError,
  FieldRangeError,
  FrameTooLargeError,
  UnsupportedVersionError,
} from '../errors.js';
import { PiecesDecoder } from '../frame/decoder.js';
import { FRAME_HEADER_BYTES, INTERNAL_BODY_BYTES_MAX } from '../limits.js';

/** "FLXI". */
export const INTERNAL_MAGIC = 0x464c5849;
export const INTERNAL_VERSION = 1;

export interface InternalFrame {
  kind: number;
  body: Uint8Array;
}

export function checkInternalHeader(
  header: Uint8Array,
  maxBodyBytes = INTERNAL_BODY_BYTES_MAX,
  offset = 0,
): { code: number; length: number } {
  const view = new DataView(header.buffer, header.byteOffset + offset, FRAME_HEADER_BYTES);
  const magic = view.getUint32(0);
  if (magic !== INTERNAL_MAGIC) throw new BadMagicError(magic, INTERNAL_MAGIC);
  const version = view.getUint16(4);
  if (version !== INTERNAL_VERSION) throw new UnsupportedVersionError(version);
  const length = view.getUint32(8);
  if (length > maxBodyBytes) throw new FrameTooLargeError(length, maxBodyBytes);
  return { code: view.getUint16(6), length };
}

/** A complete internal frame around `body`. */
export function encodeInternalFrame(kind: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  out.set(body, FRAME_HEADER_BYTES);
  return headInternalFrame(out, kind);
}

/**
 * Writes the header into the first FRAME_HEADER_BYTES of `frame`, whose body follows them
 * (an encoder that left room for it saves a copy of the body); returns `frame`.
 */
export function headInternalFrame(frame: Uint8Array, kind: number): Uint8Array {
  if (!Number.isInteger(kind) || kind < 0 || kind > 0xffff) {
    throw new FieldRangeError('internal kind', `must be a u16, got ${kind}`);
  }
  const bodyLength = frame.length - FRAME_HEADER_BYTES;
  if (bodyLength > INTERNAL_BODY_BYTES_MAX) {
    throw new FrameTooLargeError(bodyLength, INTERNAL_BODY_BYTES_MAX);
  }
  const view = new DataView(frame.buffer, frame.byteOffset, FRAME_HEADER_BYTES);
  view.setUint32(0, INTERNAL_MAGIC);
  view.setUint16(4, INTERNAL_VERSION);
  view.setUint16(6, kind);
  view.setUint32(8, bodyLength);
  return frame;
}

/** Push decoder for FLXI streams; buffering bounded by one frame of at most the body cap. */
export class InternalFrameDecoder {
  private readonly inner: PiecesDecoder;

  constructor(options: { maxBodyBytes?: number } = {}) {
    const max = options.maxBodyBytes ?? INTERNAL_BODY_BYTES_MAX;
    this.inner = new PiecesDecoder((bytes, offset) => checkInternalHeader(bytes, max, offset));
  }

  push(chunk: Uint8Array): InternalFrame[] {
    return this.inner.pushPieces(chunk).map((f) => ({ kind: f.flags, body: f.payload }));
  }

  get bufferedBytes(): number {
    return this.inner.bufferedBytes;
  }

  get idle(): boolean {
    return this.inner.idle;
  }
}
