// Goal: the answer a consumer acking one job at a time waits for (`group_acked` naming no stale
// offset) is spliced from a template yet byte-identical to the wire encoder's, and every other
// group answer still goes through the encoder. Method: groupAnswerFrame against encodeMessage.
import { type Message, encodeMessage } from '@felix/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupAnswerFrame } from '../src/groups/handlers.js';
import type { Negotiated } from '../src/session/negotiation.js';

const auth: Negotiated = { tenant: 't1', flags: 0, features: 0, featuresHi: 0, negotiating: true };

describe('group answers', () => {
  it('a_spliced_group_acked_answer_is_byte_identical_to_the_encoded_one', () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(fc.nat(), { maxLength: 5 }), (id, stale) => {
        const m: Message = { type: 'group_acked', stale, request_id: id };
        expect(groupAnswerFrame(auth, m)).toEqual(encodeMessage(m));
      }),
    );
    const nacked: Message = { type: 'group_nacked', stale: [], request_id: 3 };
    expect(groupAnswerFrame(auth, nacked)).toEqual(encodeMessage(nacked));
  });
});
