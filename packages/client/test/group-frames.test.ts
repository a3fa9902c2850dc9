// Goal: the group requests a consumer sends per job (poll, ack batch) are spliced from a template
// yet byte-identical to what the wire encoder writes, for any names (quotes, non-ASCII, a name
// that looks like a key), and the common ack answer read by its text is the decoded answer while
// anything else is left to the general decoder. Method: compare with @felix/wire's encoder and
// decoder over generated values (fast-check).
import { type Message, decodeMessage, encodeMessage, messageJson } from '@felix/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameTemplate, QUICK_ACKED_MATCHES, quickAcked } from '../src/projections/group-frames.js';

const UTF8 = new TextEncoder();
const name = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.constantFrom('jobs', 'x","request_id":0', 'größe', '"offsets":[0]', '\u001e\\'),
);

describe('group request templates', () => {
  it('a_spliced_group_poll_or_ack_batch_is_byte_identical_to_the_encoded_one', () => {
    fc.assert(
      fc.property(
        name,
        name,
        fc.nat(),
        fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        (stream, group, id, offsets, reclaim) => {
          const scope = { tenant_id: 't1', namespace: 'default', stream, shard: 3, group };
          const poll = { type: 'group_poll', ...scope, max_records: 1, wait_ms: 10_000 };
          const pollShape = { ...poll, request_id: 0, reclaim } as Message;
          const polls = new FrameTemplate(pollShape, ['request_id']);
          expect(polls.frame([id])).toEqual(
            encodeMessage({ ...poll, request_id: id, reclaim } as Message),
          );
          const ack = { type: 'group_ack_batch', ...scope };
          const acks = new FrameTemplate({ ...ack, offsets: [0], request_id: 0 } as Message, [
            'offsets',
            'request_id',
          ]);
          expect(acks.frame([`[${offsets.join(',')}]`, id])).toEqual(
            encodeMessage({ ...ack, offsets, request_id: id } as Message),
          );
        },
      ),
    );
  });

  it('a_template_refuses_a_field_it_cannot_find_once', () => {
    const shape = { type: 'group_acked', stale: [], request_id: 0 } as Message;
    expect(() => new FrameTemplate(shape, ['offsets'])).toThrow(/offsets/);
    expect(() => new FrameTemplate(shape, ['request_id', 'stale'])).toThrow(/order/);
  });

  it('a_plain_ack_answer_is_read_by_its_text_and_any_other_is_left_to_the_decoder', () => {
    expect(QUICK_ACKED_MATCHES).toBe(true);
    fc.assert(
      fc.property(fc.nat(), (id) => {
        const plain: Message = { type: 'group_acked', stale: [], request_id: id };
        const text = UTF8.encode(messageJson(plain));
        expect(quickAcked(text)).toEqual(decodeMessage(text));
      }),
    );
    const stale: Message = { type: 'group_acked', stale: [4], request_id: 9 };
    expect(quickAcked(UTF8.encode(messageJson(stale)))).toBeUndefined();
    const error = UTF8.encode('{"type":"error","message":"no"}');
    expect(quickAcked(error)).toBeUndefined();
    expect(quickAcked(UTF8.encode('{"type":"group_acked","stale":[],"request_id":1x}'))).toBe(
      undefined,
    );
  });
});
