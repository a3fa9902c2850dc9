// Goal: the byte helpers hand-written JSON codecs share write and match what the string forms
// would. Method: fast-check against String(n), string prefixes, TextEncoder and TextDecoder.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  asciiBytes,
  asciiText,
  bytesStartWith,
  decimalDigits,
  utf8Length,
  writeDecimal,
} from '../src/index.js';

describe('ascii byte helpers', () => {
  it('a_number_written_as_decimal_digits_is_its_string_form_in_place', () => {
    fc.assert(
      fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.nat({ max: 8 }), (n, pad) => {
        const text = String(n);
        expect(decimalDigits(n)).toBe(text.length);
        const out = new Uint8Array(pad + text.length + 1).fill(0x2e);
        writeDecimal(out, pad + text.length, n);
        // Only the digits' own bytes change, right-aligned at `end`.
        expect(new TextDecoder().decode(out)).toBe(`${'.'.repeat(pad)}${text}.`);
      }),
    );
  });

  it('a_prefix_matches_at_its_offset_and_never_past_the_end', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        }),
        fc.string({
          unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
          maxLength: 6,
        }),
        fc.nat({ max: 10 }),
        (s, what, at) => {
          expect(bytesStartWith(asciiBytes(s), at, asciiBytes(what))).toBe(
            at + what.length <= s.length && s.startsWith(what, at),
          );
        },
      ),
    );
  });

  it('utf8_length_is_what_the_text_encoder_writes_and_ascii_text_reads_back', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 24 }), (s) => {
        expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 24 }), (s) => {
        const bytes = asciiBytes(`[${s}]`);
        expect(asciiText(bytes, 1, bytes.length - 1)).toBe(s);
      }),
    );
  });
});
