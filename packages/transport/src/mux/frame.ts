/**
 * The TLS multiplexer's framing: a pure codec (no I/O). Specified in docs/protocol.md,
 * "Transports and stream roles". Every frame is a 9-byte header (type u8, stream id u32 BE,
 * payload length u32 BE) then the payload. A connection opens with the 8-byte preface.
 */
import {
  CLOSE_REASON_BYTES_MAX,
  MUX_CONTROL_PAYLOAD_BYTES_MAX,
  MUX_FRAME_PAYLOAD_BYTES_MAX,
} from '../limits.js';
import { ProtocolError } from '../errors.js';

export const MUX_PREFACE = new Uint8Array([0x46, 0x4c, 0x58, 0x4d, 0x55, 0x58, 0x00, 0x01]); // "FLXMUX" 0 1
export const MUX_HEADER_BYTES = 9;

export const FRAME_DATA = 0x0;
export const FRAME_FIN = 0x1;
export const FRAME_RESET = 0x2;
export const FRAME_CREDIT = 0x3;
export const FRAME_SETTINGS = 0x4;
export const FRAME_PING = 0x5;
export const FRAME_PONG = 0x6;
export const FRAME_CLOSE = 0x7;
export const FRAME_STREAMS = 0x8;
const FRAME_TYPE_LAST = FRAME_STREAMS;

/** Payload length each type must have, or -1 when variable (bounded separately). */
const FIXED_LENGTH: readonly number[] = [-1, 0, 4, 4, 12, 8, 8, -1, 8];
/** Types addressed to a stream; the rest are connection-level and carry stream id 0. */
const STREAM_LEVEL: readonly boolean[] = [
  true,
  true,
  true,
  true,
  false,
  false,
  false,
  false,
  false,
];

export interface Settings {
  maxStreamsBidi: number;
  maxStreamsUni: number;
  streamWindowBytes: number;
}

/** Receives decoded frames. `payload` may view the input chunk (the socket never reuses a chunk
 *  it handed out). A DATA frame split across chunks arrives as several DATA calls, one per
 *  piece, in order: only control frames are assembled. */
export interface FrameSink {
  onFrame(type: number, streamId: number, payload: Uint8Array): void;
}

/**
 * Incremental decoder. `push` feeds bytes; every complete frame goes to the sink in order. Any
 * malformed input throws `ProtocolError` (and only that); lengths are checked before any
 * allocation, so a hostile length cannot make it buffer more than one legal control frame (DATA
 * is never buffered here).
 */
export class MuxDecoder {
  private prefaceSeen = 0;
  private readonly header = new Uint8Array(MUX_HEADER_BYTES);
  private headerHave = 0;
  private type = 0;
  private streamId = 0;
  private partial: Uint8Array | null = null;
  private partialHave = 0;
  /** Bytes of the current DATA frame still to come (delivered piece by piece). */
  private dataLeft = 0;
  private failed: ProtocolError | null = null;

  constructor(private readonly sink: FrameSink) {}

  push(chunk: Uint8Array): void {
    if (this.failed) throw this.failed;
    try {
      this.pushInner(chunk);
    } catch (err) {
      this.failed =
        err instanceof ProtocolError
          ? err
          : new ProtocolError('multiplexer decode failed', { cause: err });
      throw this.failed;
    }
  }

  private pushInner(chunk: Uint8Array): void {
    let pos = 0;
    const end = chunk.length;
    while (this.prefaceSeen < MUX_PREFACE.length && pos < end) {
      if (chunk[pos] !== MUX_PREFACE[this.prefaceSeen]) {
        throw new ProtocolError(
          'bad multiplexer preface: the peer does not speak felix/1 multiplexing',
        );
      }
      this.prefaceSeen++;
      pos++;
    }
    while (pos < end) {
      if (this.dataLeft > 0) {
        // A DATA frame larger than what has arrived: hand each piece on as a view of its chunk
        // (a stream is a byte stream; assembling the frame would only add a copy).
        const take = Math.min(this.dataLeft, end - pos);
        this.dataLeft -= take;
        const piece = chunk.subarray(pos, pos + take);
        pos += take;
        this.sink.onFrame(FRAME_DATA, this.streamId, piece);
        continue;
      }
      if (this.partial !== null) {
        const need = this.partial.length - this.partialHave;
        const take = Math.min(need, end - pos);
        this.partial.set(chunk.subarray(pos, pos + take), this.partialHave);
        this.partialHave += take;
        pos += take;
        if (this.partialHave < this.partial.length) return;
        const payload = this.partial;
        this.partial = null;
        this.sink.onFrame(this.type, this.streamId, payload);
        continue;
      }
      let length: number;
      if (this.headerHave === 0 && end - pos >= MUX_HEADER_BYTES) {
        // Fast path: the whole header is in this chunk.
        this.type = chunk[pos]!;
        this.streamId = readU32(chunk, pos + 1);
        length = readU32(chunk, pos + 5);
        pos += MUX_HEADER_BYTES;
      } else {
        const take = Math.min(MUX_HEADER_BYTES - this.headerHave, end - pos);
        this.header.set(chunk.subarray(pos, pos + take), this.headerHave);
        this.headerHave += take;
        pos += take;
        if (this.headerHave < MUX_HEADER_BYTES) return;
        this.headerHave = 0;
        this.type = this.header[0]!;
        this.streamId = readU32(this.header, 1);
        length = readU32(this.header, 5);
      }
      checkHeader(this.type, this.streamId, length);
      if (end - pos >= length) {
        const payload = chunk.subarray(pos, pos + length);
        pos += length;
        this.sink.onFrame(this.type, this.streamId, payload);
      } else if (this.type === FRAME_DATA) {
        this.dataLeft = length;
      } else {
        this.partial = new Uint8Array(length); // bounded by checkHeader
        this.partialHave = 0;
      }
    }
  }
}

function checkHeader(type: number, streamId: number, length: number): void {
  if (type > FRAME_TYPE_LAST)
    throw new ProtocolError(`unknown multiplexer frame type 0x${type.toString(16)}`);
  const fixed = FIXED_LENGTH[type]!;
  if (fixed >= 0 && length !== fixed) {
    throw new ProtocolError(`frame type ${type} must carry ${fixed} payload bytes, not ${length}`);
  }
  if (type === FRAME_DATA && length > MUX_FRAME_PAYLOAD_BYTES_MAX) {
    throw new ProtocolError(`DATA frame of ${length} bytes exceeds ${MUX_FRAME_PAYLOAD_BYTES_MAX}`);
  }
  if (type === FRAME_CLOSE && (length < 4 || length > 4 + CLOSE_REASON_BYTES_MAX)) {
    throw new ProtocolError(`CLOSE frame of ${length} bytes is out of range`);
  }
  if (length > MUX_CONTROL_PAYLOAD_BYTES_MAX && type !== FRAME_DATA) {
    throw new ProtocolError(`control frame of ${length} bytes is too large`);
  }
  if (!STREAM_LEVEL[type] && streamId !== 0) {
    throw new ProtocolError(`connection-level frame type ${type} carries stream id ${streamId}`);
  }
}

export function readU32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

export function writeU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v >>> 24;
  b[at + 1] = v >>> 16;
  b[at + 2] = v >>> 8;
  b[at + 3] = v;
}

/** Writes a frame header at `at`. */
export function writeHeader(
  b: Uint8Array,
  at: number,
  type: number,
  streamId: number,
  length: number,
): void {
  b[at] = type;
  writeU32(b, at + 1, streamId);
  writeU32(b, at + 5, length);
}

export function encodeSettings(s: Settings): Uint8Array {
  const p = new Uint8Array(12);
  writeU32(p, 0, s.maxStreamsBidi);
  writeU32(p, 4, s.maxStreamsUni);
  writeU32(p, 8, s.streamWindowBytes);
  return p;
}

export function decodeSettings(p: Uint8Array): Settings {
  return {
    maxStreamsBidi: readU32(p, 0),
    maxStreamsUni: readU32(p, 4),
    streamWindowBytes: readU32(p, 8),
  };
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

export function encodeClose(code: number, reason: string): Uint8Array {
  let r = utf8.encode(reason);
  if (r.length > CLOSE_REASON_BYTES_MAX) r = r.subarray(0, CLOSE_REASON_BYTES_MAX);
  const p = new Uint8Array(4 + r.length);
  writeU32(p, 0, code);
  p.set(r, 4);
  return p;
}

export function decodeClose(p: Uint8Array): { code: number; reason: string } {
  return { code: readU32(p, 0), reason: utf8Decoder.decode(p.subarray(4)) };
}

export function encodeU32Pair(a: number, b: number): Uint8Array {
  const p = new Uint8Array(8);
  writeU32(p, 0, a);
  writeU32(p, 4, b);
  return p;
}

/** A whole connection that says only why it ends: the preface, then CLOSE. A listener sends
 *  it to a dialer it refuses before any session exists (a client certificate it does not accept). */
export function refusalBytes(code: number, reason: string): Uint8Array {
  const payload = encodeClose(code, reason);
  const out = new Uint8Array(MUX_PREFACE.length + MUX_HEADER_BYTES + payload.length);
  out.set(MUX_PREFACE, 0);
  writeHeader(out, MUX_PREFACE.length, FRAME_CLOSE, 0, payload.length);
  out.set(payload, MUX_PREFACE.length + MUX_HEADER_BYTES);
  return out;
}
