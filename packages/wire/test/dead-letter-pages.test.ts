// Goal: dead-letter pages on the wire (FEATURE_HI_GROUP_DEAD_LETTER_PAGES): `after` and `limit`
// on `group_dead_letters` and `more` on `group_dead_letter_list` round-trip with any value they
// can carry; anything else in them (negative, fractional, too large, not a number) is a typed
// WireError, never another throw or a silently different value; and the fields are additive,
// so a request or answer without them is byte for byte what it was before them. Method:
// fast-check over the fields' values and over arbitrary JSON in their place, through both the
// codec and the table-only decoder.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeMessageByTable } from '../src/json/message-codec.js';
import {
  FEATURE_HI_GROUP_DEAD_LETTER_PAGES,
  type Message,
  OFFSET_MAX,
  WireError,
  decodeMessage,
  messageJson,
} from '../src/index.js';
import { utf8 } from './helpers.js';

const SCOPE = '"tenant_id":"t1","namespace":"default","stream":"jobs","shard":0,"group":"g"';
const G = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'g' };
const U32_MAX = 0xffff_ffff;

/** Both decoders: the codec (with its fast paths) and the field table alone. */
const decoders = [decodeMessage, decodeMessageByTable];

/** Any JSON value text a hostile or buggy peer might put where a number belongs. */
const anyJsonNumberish = fc.oneof(
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.constantFrom('null', 'true', '"5"', '[]', '{}', '-0', '1e3', '1.0', '4294967296'),
);

function requestText(after: string | undefined, limit: string | undefined): string {
  let text = `{"type":"group_dead_letters",${SCOPE},"request_id":7`;
  if (after !== undefined) text += `,"after":${after}`;
  if (limit !== undefined) text += `,"limit":${limit}`;
  return `${text}}`;
}

/** What a decoder may make of `text` in a number's place: that number, exactly, or a refusal
 *  (`null` reads as absent, as on every optional field). */
function acceptable(text: string, max: number): number | undefined | 'refused' {
  if (text === 'null') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'refused';
  }
  // Beyond 2^53 the number parsed here is rounded, but then it is beyond both bounds too.
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    return 'refused';
  }
  return value; // -0 included: a broker reads it as 0 (a limit of 0 it refuses)
}

describe('dead-letter pages on the wire', () => {
  it('a_dead_letter_page_request_and_answer_round_trip_with_any_after_limit_and_more', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: OFFSET_MAX }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: U32_MAX }), { nil: undefined }),
        fc.array(fc.integer({ min: 0, max: OFFSET_MAX }), { maxLength: 8 }),
        fc.boolean(),
        (after, limit, offsets, more) => {
          const ask: Message = {
            type: 'group_dead_letters',
            ...G,
            request_id: 7,
            ...(after !== undefined ? { after } : {}),
            ...(limit !== undefined ? { limit } : {}),
          };
          const page: Message = { type: 'group_dead_letter_list', offsets, request_id: 7, more };
          for (const decode of decoders) {
            expect(decode(utf8(messageJson(ask)))).toEqual(ask);
            expect(decode(utf8(messageJson(page)))).toEqual(page);
          }
        },
      ),
    );
  });

  it('a_dead_letter_page_with_a_bad_after_or_limit_is_a_typed_error_or_its_exact_value', () => {
    fc.assert(
      fc.property(
        fc.option(anyJsonNumberish, { nil: undefined }),
        fc.option(anyJsonNumberish, { nil: undefined }),
        (after, limit) => {
          const text = requestText(after, limit);
          const wantAfter = after === undefined ? undefined : acceptable(after, OFFSET_MAX);
          const wantLimit = limit === undefined ? undefined : acceptable(limit, U32_MAX);
          const refused = wantAfter === 'refused' || wantLimit === 'refused';
          for (const decode of decoders) {
            let got: Message | WireError;
            try {
              got = decode(utf8(text));
            } catch (err) {
              // Only the wire's typed errors, never a TypeError or a RangeError.
              expect(err).toBeInstanceOf(WireError);
              got = err as WireError;
            }
            if (refused) {
              expect(got, text).toBeInstanceOf(WireError);
              continue;
            }
            expect(got, text).toMatchObject({ type: 'group_dead_letters', request_id: 7 });
            const msg = got as Extract<Message, { type: 'group_dead_letters' }>;
            expect(msg.after).toBe(wantAfter);
            expect(msg.limit).toBe(wantLimit);
          }
        },
      ),
      { numRuns: 500 },
    );
    // The cases a client is most likely to get wrong, each refused by both decoders.
    for (const [after, limit] of [
      ['-1', undefined],
      ['1.5', undefined],
      ['"12"', undefined],
      ['9007199254740993', undefined],
      [undefined, '-1'],
      [undefined, '0.5'],
      [undefined, '4294967296'],
    ] as const) {
      for (const decode of decoders) {
        let err: unknown;
        try {
          decode(utf8(requestText(after, limit)));
        } catch (e) {
          err = e;
        }
        expect(err, `${after} ${limit}`).toBeInstanceOf(WireError);
      }
    }
  });

  it('a_dead_letter_request_and_answer_without_pages_keep_their_bytes_and_read_as_no_more', () => {
    // The bytes an older client sends and an older broker answers, unchanged by the new fields.
    const ask: Message = { type: 'group_dead_letters', ...G, request_id: 7 };
    expect(messageJson(ask)).toBe(`{"type":"group_dead_letters",${SCOPE},"request_id":7}`);
    const old = '{"type":"group_dead_letter_list","offsets":[4,9],"request_id":7}';
    for (const decode of decoders) {
      expect(decode(utf8(old))).toEqual({
        type: 'group_dead_letter_list',
        offsets: [4, 9],
        request_id: 7,
        more: false,
      });
    }
    // `more` is written only when true, so a last page is what an older broker answers.
    const last: Message = {
      type: 'group_dead_letter_list',
      offsets: [4, 9],
      request_id: 7,
      more: false,
    };
    expect(messageJson(last)).toBe(old);
    expect(FEATURE_HI_GROUP_DEAD_LETTER_PAGES).toBe(0x100);
  });
});
