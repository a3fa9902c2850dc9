// Goal: the FLX1 header and the push decoder refuse every malformed header from the header
// alone and return exactly the frames of a valid stream. Method: hand-built frames and
// targeted corruptions of one header field at a time.
import { describe, expect, it } from 'vitest';
import {
  BadMagicError,
  DecoderFailedError,
  FrameDecoder,
  FrameTooLargeError,
  InvalidFlagCombinationError,
  TrailingBytesError,
  TruncatedError,
  UnknownFlagsError,
  UnsupportedVersionError,
  decodeFrame,
  decodeFrameHeader,
  encodeFrame,
  frameLayout,
  writeFrameHeader,
} from '../src/index.js';
import { handFrame, hex, utf8 } from './helpers.js';

describe('frame header', () => {
  it('an_ok_frame_encodes_to_the_reference_bytes', () => {
    const frame = encodeFrame(0, utf8('{"type":"ok"}'));
    expect(hex(frame)).toBe(
      `464c583100010000 0000000d`.replace(' ', '') + hex(utf8('{"type":"ok"}')),
    );
  });

  it('a_header_is_read_and_written_big_endian_at_its_offset_in_a_view_with_high_bits_unsigned', () => {
    // The header sits at offset 3 of a view that itself starts 5 bytes into its buffer.
    const buffer = new Uint8Array(5 + 3 + 12);
    const view = buffer.subarray(5);
    view.set([0x46, 0x4c, 0x58, 0x31, 0x00, 0x01, 0x00, 0x00, 0x80, 0x00, 0x00, 0x01], 3);
    expect(decodeFrameHeader(view, 3, 0xffff_ffff)).toEqual({ flags: 0, length: 0x8000_0001 });
    view.set([0xc6, 0x4c, 0x58, 0x31], 3);
    const err = (() => {
      try {
        decodeFrameHeader(view, 3, 0xffff_ffff);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(BadMagicError);
    expect((err as BadMagicError).found).toBe(0xc64c5831);
    view.set([0x46, 0x4c, 0x58, 0x31, 0x01, 0x01], 3);
    expect(() => decodeFrameHeader(view, 3)).toThrow(UnsupportedVersionError);
    expect(() => decodeFrameHeader(view, 9)).toThrow(TruncatedError);
    // Written the same way: big-endian at its offset, the bytes around it untouched.
    view.fill(0xee);
    writeFrameHeader(view, 3, 0x0102, 0x8000_0001);
    expect(hex(buffer)).toBe(`${'00'.repeat(5)}${'ee'.repeat(3)}464c58310001010280000001`);
    expect(() => writeFrameHeader(view, 4, 0, 0)).toThrow(RangeError);
  });

  it('a_wrong_magic_is_refused_from_the_header', () => {
    const bytes = handFrame(0, utf8('{}'), 0x464c5832);
    expect(() => decodeFrame(bytes)).toThrow(BadMagicError);
  });

  it('a_version_other_than_one_is_refused', () => {
    expect(() => decodeFrame(handFrame(0, utf8('{}'), 0x464c5831, 2))).toThrow(
      UnsupportedVersionError,
    );
  });

  it('every_unknown_flag_bit_is_refused_never_masked', () => {
    // Every bit of the u16 names something now; a wider word is unknown, and 0x8000 with any
    // other bit is a reserved extension layout (0x8001 and 0x8002, the binary cache and group
    // exchanges, aside),
    // refused rather than read as 0x8000.
    expect(() => frameLayout(0x1_0000)).toThrow(UnknownFlagsError);
    expect(() => decodeFrame(handFrame(0x8003, new Uint8Array(0)))).toThrow(
      InvalidFlagCombinationError,
    );
    expect(() => decodeFrame(handFrame(0xc000, new Uint8Array(0)))).toThrow(
      InvalidFlagCombinationError,
    );
  });

  it('modifier_bits_without_their_base_are_refused', () => {
    const bad = [0x0800 | 0x0004, 0x0100 | 0x0001, 0x0400 | 0x0010, 0x0008, 0x0020, 0x0003, 0x0011];
    for (const flags of bad) expect(() => frameLayout(flags)).toThrow(InvalidFlagCombinationError);
  });

  it('each_defined_layout_is_recognised_by_its_flags', () => {
    expect(frameLayout(0)).toBe('json');
    expect(frameLayout(0x0001 | 0x0008 | 0x0040 | 0x0100)).toBe('publish_batch');
    expect(frameLayout(0x0010 | 0x0080 | 0x0200 | 0x0400)).toBe('publish_ack');
    expect(frameLayout(0x0004 | 0x0020 | 0x0800 | 0x2000 | 0x4000)).toBe('event_batch');
    expect(frameLayout(0x0002 | 0x0020)).toBe('event_batch');
  });

  it('a_frame_with_extra_bytes_after_its_payload_is_refused', () => {
    const bytes = new Uint8Array([...handFrame(0, utf8('{}')), 0]);
    expect(() => decodeFrame(bytes)).toThrow(TrailingBytesError);
  });
});

describe('frame decoder', () => {
  it('a_stream_split_at_every_byte_yields_the_same_frames', () => {
    const a = handFrame(0, utf8('{"type":"ok"}'));
    const b = handFrame(0, new Uint8Array(0));
    const c = handFrame(0x0001, new Uint8Array(300).fill(7));
    const stream = new Uint8Array([...a, ...b, ...c]);
    const decoder = new FrameDecoder();
    const frames = [];
    for (let i = 0; i < stream.length; i++) frames.push(...decoder.push(stream.subarray(i, i + 1)));
    expect(frames.map((f) => [f.flags, hex(f.payload)])).toEqual([
      [0, hex(utf8('{"type":"ok"}'))],
      [0, ''],
      [1, hex(new Uint8Array(300).fill(7))],
    ]);
    expect(decoder.idle).toBe(true);
  });

  it('an_oversized_length_is_refused_before_its_body_is_buffered', () => {
    const decoder = new FrameDecoder({ maxPayloadBytes: 1024 });
    const header = handFrame(0, new Uint8Array(0));
    new DataView(header.buffer).setUint32(8, 1025);
    expect(() => decoder.push(header)).toThrow(FrameTooLargeError);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('a_failed_decoder_refuses_further_bytes', () => {
    const decoder = new FrameDecoder();
    expect(() => decoder.push(handFrame(0x8003, new Uint8Array(0)))).toThrow(
      InvalidFlagCombinationError,
    );
    expect(() => decoder.push(handFrame(0, new Uint8Array(0)))).toThrow(DecoderFailedError);
  });

  it('buffered_bytes_never_exceed_one_incomplete_frame', () => {
    const decoder = new FrameDecoder({ maxPayloadBytes: 64 });
    const frame = handFrame(0x0001, new Uint8Array(64));
    decoder.push(frame.subarray(0, 70));
    expect(decoder.bufferedBytes).toBeLessThanOrEqual(12 + 64);
    expect(decoder.push(frame.subarray(70))).toHaveLength(1);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('a_lowered_cap_applies_to_the_next_header', () => {
    const decoder = new FrameDecoder();
    decoder.setMaxPayloadBytes(4);
    expect(() => decoder.push(handFrame(0, utf8('{"a":1}')))).toThrow(FrameTooLargeError);
  });
});
