/**
 * Goal: our segment bytes match the reference format byte for byte, and the decoders of
 * on-disk bytes only ever answer with a verdict, never throw.
 * Method: golden vectors from the reference (header, record, publisher record, shard dir),
 * round trips, and fast-check fuzzing of the header and record decoders.
 */
import { crc32 } from '@felix/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32Range } from '../src/segment/checksum.js';
import {
  FLAG_PUBLISHER,
  HEAD_OK,
  RecordHead,
  decodeSegmentHeader,
  encodeRecord,
  encodeSegmentHeader,
  isHeaderVerdict,
  readRecordHead,
  recordChecksumOk,
  viewOf,
} from '../src/segment/format.js';
import { toRecord } from '../src/segment/reader.js';
import { shardDirName } from '../src/log/layout.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();

describe('segment format', () => {
  it('a_segment_header_matches_the_golden_bytes', () => {
    const h = encodeSegmentHeader({ baseOffset: 1, createdAtMicros: 2 });
    expect(hex(h)).toBe(
      '464C5347' +
        '0003' +
        '0000' +
        '0000000000000001' +
        '0000000000000002' +
        'ADEB65E9' +
        '00000000',
    );
    const decoded = decodeSegmentHeader(h);
    expect(decoded).toEqual({ version: 3, baseOffset: 1, createdAtMicros: 2 });
  });

  it('older_segment_header_versions_carry_the_golden_checksums', () => {
    const v4 = encodeSegmentHeader({ baseOffset: 1, createdAtMicros: 2, version: 4 });
    const v2 = encodeSegmentHeader({ baseOffset: 1, createdAtMicros: 2, version: 2 });
    expect(hex(v4.subarray(24, 28))).toBe('E7D5EEA2');
    expect(hex(v2.subarray(24, 28))).toBe('7A09E5B1');
    const v1 = encodeSegmentHeader({ baseOffset: 1, createdAtMicros: 2, version: 1 });
    const verdict = decodeSegmentHeader(v1);
    expect(isHeaderVerdict(verdict) && verdict.kind).toBe('SegmentVersion');
  });

  it('a_record_matches_the_golden_bytes', () => {
    const r = encodeRecord(7, 9, new TextEncoder().encode('hi'));
    expect(hex(r)).toBe(
      '00000002' + '0000000000000007' + '0000000000000009' + 'C654DE27' + '2402152C' + '6869',
    );
  });

  it('a_record_with_a_publisher_matches_the_golden_trailer_and_checksums', () => {
    const enc = new TextEncoder();
    const r = encodeRecord(7, 9, enc.encode('hi'), { publisher: enc.encode('al') });
    expect(hex(r.subarray(0, 4))).toBe('08000005');
    expect(hex(r.subarray(20, 28))).toBe('7B1D74DE515E8163');
    expect(hex(r.subarray(28))).toBe('6869616C02');
    const head = new RecordHead();
    const view = viewOf(r);
    expect(readRecordHead(r, view, 0, r.length, 6, head)).toBe(HEAD_OK);
    expect(head.flags).toBe(FLAG_PUBLISHER);
    expect(recordChecksumOk(r, view, 0, head)).toBe(true);
    const rec = toRecord(r, view, 0, head);
    expect(new TextDecoder().decode(rec?.payload)).toBe('hi');
    expect(new TextDecoder().decode(rec?.publisher)).toBe('al');
    // A version 3 segment may not hold a publisher-bearing record.
    expect(readRecordHead(r, view, 0, r.length, 3, head)).toBe('RecordFlags');
  });

  it('a_shard_directory_name_matches_the_golden_name', () => {
    expect(shardDirName({ tenant: 'acme', namespace: 'default', stream: 'orders', shard: 0 })).toBe(
      'acme_default_orders_0-0d3aed4b998d2798',
    );
    const odd = shardDirName({
      tenant: '',
      namespace: 'a.b/../c',
      stream: 'x'.repeat(40),
      shard: 3,
    });
    expect(odd).toMatch(/^__a_b____c_x{32}_3-[0-9a-f]{16}$/);
  });

  it('an_offset_beyond_safe_integers_is_refused_by_its_typed_verdict', () => {
    const r = encodeRecord(7, 9, new TextEncoder().encode('hi'));
    const view = viewOf(r);
    view.setUint32(4, 0x0020_0000); // offset 2^53 + 7
    view.setUint32(20, crc32(r.subarray(0, 20)));
    expect(readRecordHead(r, view, 0, r.length, 3, new RecordHead())).toBe('OffsetTooLarge');
    const h = encodeSegmentHeader({ baseOffset: 1, createdAtMicros: 2 });
    const hv = viewOf(h);
    hv.setUint32(8, 0xffff_ffff);
    hv.setUint32(24, crc32(h.subarray(0, 24)));
    const verdict = decodeSegmentHeader(h);
    expect(isHeaderVerdict(verdict) && verdict.kind).toBe('OffsetTooLarge');
  });

  it('native_and_pure_checksums_agree_and_continue', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat({ max: 600 }), (bytes, cut) => {
        const k = Math.min(cut, bytes.length);
        const whole = crc32(bytes);
        expect(crc32Range(bytes, 0, 0, bytes.length)).toBe(whole);
        expect(crc32Range(bytes, crc32Range(bytes, 0, 0, k), k, bytes.length)).toBe(whole);
      }),
    );
  });

  it('the_header_decoder_answers_random_bytes_with_a_verdict', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const h = decodeSegmentHeader(bytes);
        if (!isHeaderVerdict(h)) expect(bytes.length).toBeGreaterThanOrEqual(32);
      }),
    );
  });

  it('the_record_decoder_never_accepts_a_damaged_record', () => {
    const good = encodeRecord(5, 11, new TextEncoder().encode('payload bytes'));
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.array(fc.tuple(fc.nat({ max: good.length - 1 }), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        (random, flips) => {
          const head = new RecordHead();
          // Random bytes: any verdict, never a throw.
          readRecordHead(random, viewOf(random), 0, random.length, 6, head);
          // A flipped record is never accepted whole.
          const bad = good.slice();
          for (const [at, x] of flips) bad[at]! ^= x;
          const view = viewOf(bad);
          const verdict = readRecordHead(bad, view, 0, bad.length, 6, head);
          const accepted =
            verdict === HEAD_OK &&
            head.totalBytes <= bad.length &&
            recordChecksumOk(bad, view, 0, head);
          if (accepted) expect(hex(bad)).toBe(hex(good));
        },
      ),
    );
  });
});
