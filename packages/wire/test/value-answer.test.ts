// Goal: a hot get's answer, assembled from a head encoded once and the request id, is exactly
// the frame the JSON codec writes for the same `cache_value`. Method: compare both encodings
// byte for byte over keys and values that need escaping, multi-byte UTF-8 and every base64
// padding, with and without a request id.
import { describe, expect, it } from 'vitest';
import { type Message, encodeMessage, valueAnswerFrame, valueAnswerHead } from '../src/index.js';

describe('valueAnswerFrame', () => {
  it('a_hot_answer_is_the_bytes_the_codec_writes', () => {
    const scope = { tenant_id: 't"1', namespace: 'n\\s', cache: 'câché' };
    const keys = ['k', 'k1', 'a "quoted"\nkey', 'ключ', '😀\u0000\u001f'];
    const values = [0, 1, 2, 3, 100, 4096].map((n) =>
      Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff),
    );
    for (const key of keys) {
      for (const value of values) {
        for (const requestId of [undefined, 0, 7, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
          const msg: Message = { type: 'cache_value', ...scope, key, value };
          if (requestId !== undefined) msg.request_id = requestId;
          const got = valueAnswerFrame(valueAnswerHead(scope, key, value), requestId);
          expect(Buffer.from(got).equals(Buffer.from(encodeMessage(msg)))).toBe(true);
        }
      }
    }
  });
});
