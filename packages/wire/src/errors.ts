/**
 * Every operating error the wire codec raises. Decoding untrusted bytes throws only these:
 * one subclass per failure, each with a stable `code` and the facts a caller needs to log
 * or answer it. Programmer errors (an encoder handed an impossible value by our own code)
 * still use these types when the value could have come from outside, so a caller never has
 * to catch anything else.
 */
import { FelixError } from '@felix/common';

/** Base of every wire failure. Catch this to handle any malformed or unsupported input. */
export abstract class WireError extends FelixError {}

/** The first four bytes of a frame are not the expected magic (`FLX1` or `FLXI`). */
export class BadMagicError extends WireError {
  readonly code = 'FELIX_WIRE_BAD_MAGIC';
  constructor(
    readonly found: number,
    readonly expected: number,
  ) {
    super(`bad frame magic 0x${hex32(found)}, expected 0x${hex32(expected)}`);
  }
}

/** The header names a protocol version other than 1. */
export class UnsupportedVersionError extends WireError {
  readonly code = 'FELIX_WIRE_UNSUPPORTED_VERSION';
  constructor(readonly found: number) {
    super(`unsupported frame version ${found}, expected 1`);
  }
}

/** The frame carries a flag bit this codec does not know; it must be rejected, never masked. */
export class UnknownFlagsError extends WireError {
  readonly code = 'FELIX_WIRE_UNKNOWN_FLAGS';
  constructor(
    readonly flags: number,
    readonly unknown: number,
  ) {
    super(`frame flags 0x${flags.toString(16)} carry unknown bits 0x${unknown.toString(16)}`);
  }
}

/** Known flag bits in a combination no layout defines (e.g. 0x0800 without 0x0020). */
export class InvalidFlagCombinationError extends WireError {
  readonly code = 'FELIX_WIRE_INVALID_FLAG_COMBINATION';
  constructor(
    readonly flags: number,
    readonly reason: string,
  ) {
    super(`invalid frame flags 0x${flags.toString(16)}: ${reason}`);
  }
}

/** The header announces a payload larger than the configured maximum. */
export class FrameTooLargeError extends WireError {
  readonly code = 'FELIX_WIRE_FRAME_TOO_LARGE';
  constructor(
    readonly length: number,
    readonly max: number,
  ) {
    super(`frame payload of ${length} bytes exceeds the maximum of ${max}`);
  }
}

/** A body ended before a field it must contain. */
export class TruncatedError extends WireError {
  readonly code = 'FELIX_WIRE_TRUNCATED';
  constructor(
    readonly what: string,
    readonly position: number,
    readonly needed: number,
    readonly available: number,
  ) {
    super(`truncated ${what} at byte ${position}: needs ${needed} bytes, ${available} left`);
  }
}

/** A body had bytes left over after its last field. */
export class TrailingBytesError extends WireError {
  readonly code = 'FELIX_WIRE_TRAILING_BYTES';
  constructor(
    readonly what: string,
    readonly trailing: number,
  ) {
    super(`${trailing} trailing bytes after ${what}`);
  }
}

/** A count or length field exceeds its bound or the bytes that could possibly hold it. */
export class CountTooLargeError extends WireError {
  readonly code = 'FELIX_WIRE_COUNT_TOO_LARGE';
  constructor(
    readonly what: string,
    readonly count: number,
    readonly max: number,
  ) {
    super(`${what} of ${count} exceeds the bound of ${max}`);
  }
}

/** A JSON payload is not valid JSON (or nests deeper than the codec allows). */
export class InvalidJsonError extends WireError {
  readonly code = 'FELIX_WIRE_INVALID_JSON';
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`invalid JSON at byte ${position}: ${reason}`);
  }
}

/** A JSON message is well-formed JSON but a field is missing or has the wrong type. */
export class InvalidMessageError extends WireError {
  readonly code = 'FELIX_WIRE_INVALID_MESSAGE';
  constructor(
    readonly messageType: string,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`invalid ${messageType} message: field ${field} ${reason}`);
  }
}

/** A string field is not valid UTF-8. */
export class InvalidUtf8Error extends WireError {
  readonly code = 'FELIX_WIRE_INVALID_UTF8';
  constructor(readonly what: string) {
    super(`${what} is not valid UTF-8`);
  }
}

/** A u64 offset or id is larger than a JavaScript safe integer (2^53 - 1). */
export class OffsetOutOfRangeError extends WireError {
  readonly code = 'FELIX_WIRE_OFFSET_OUT_OF_RANGE';
  constructor(
    readonly what: string,
    readonly value: bigint,
  ) {
    super(`${what} ${value} is beyond the safe integer range`);
  }
}

/** A value handed to an encoder does not fit its wire field (too long, negative, too wide). */
export class FieldRangeError extends WireError {
  readonly code = 'FELIX_WIRE_FIELD_RANGE';
  constructor(
    readonly what: string,
    readonly reason: string,
  ) {
    super(`${what} ${reason}`);
  }
}

/**
 * A string handed to an encoder holds a lone UTF-16 surrogate (U+D800..U+DFFF without its pair).
 * UTF-8 has no bytes for one: TextEncoder would write U+FFFD's, so `'k\ud800'` and `'k\ufffd'`
 * would go out as one key. Refused instead; `index` is the lone surrogate's UTF-16 position.
 */
export class LoneSurrogateError extends WireError {
  readonly code = 'FELIX_WIRE_LONE_SURROGATE';
  constructor(
    readonly what: string,
    readonly index: number,
  ) {
    super(
      `${what} holds a lone UTF-16 surrogate at index ${index}, which has no UTF-8 bytes ` +
        '(String.prototype.toWellFormed() replaces it with U+FFFD, if that is what is meant)',
    );
  }
}

/** An enumerated byte (ack mode, status, log, op) holds a value the layout does not define. */
export class InvalidEnumError extends WireError {
  readonly code = 'FELIX_WIRE_INVALID_ENUM';
  constructor(
    readonly what: string,
    readonly value: number,
  ) {
    super(`${what} has undefined value ${value}`);
  }
}

/** A push decoder was used after it had already failed; the stream must be closed. */
export class DecoderFailedError extends WireError {
  readonly code = 'FELIX_WIRE_DECODER_FAILED';
  constructor(cause: WireError) {
    super(`frame decoder already failed: ${cause.message}`, { cause });
  }
}

function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}
