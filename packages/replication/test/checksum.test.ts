// Goal: the checksum the leader ships and the follower checks with (native CRC over payloads)
// is exactly the wire's batch checksum, for any payloads and marks, so either end may use
// either code.
// Method: fast-check over payload lists with lengths on both sides of the native cut-over.
import { batchChecksum } from '@felix/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { replicaBatchChecksum } from '../src/checksum.js';

describe('replica batch checksum', () => {
  it('the_replica_batch_checksum_is_the_wires_for_any_payloads_and_marks', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 600 }), { maxLength: 12 }),
        fc.option(fc.uint8Array({ maxLength: 12 }), { nil: undefined }),
        (payloads, marks) => {
          expect(replicaBatchChecksum(payloads, marks)).toBe(batchChecksum(payloads, marks));
        },
      ),
      { numRuns: 300 },
    );
    // A one-byte change anywhere in a long payload changes it.
    const long = new Uint8Array(4096).fill(7);
    const before = replicaBatchChecksum([long]);
    long[4000] = 8;
    expect(replicaBatchChecksum([long])).not.toBe(before);
  });
});
