// Goal: a batching publisher never gathers a batch the client's own publishBatch (and the broker)
// would refuse for its record count: packages/client/README.md "Publish" and publisher.ts say a
// batch is cut before it grows past what one frame carries, so a record is refused only alone.
// Method: the Publisher over a fake send that refuses, as `FelixClient.publishBatch` does, any
// batch over PUBLISH_BATCH_RECORDS_MAX (65,536 records); a `maxBatchRecords` above that bound.
import { InvalidArgumentError } from '@felix/client';
import { PUBLISH_BATCH_RECORDS_MAX } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { Publisher } from './units.js';

describe('a publisher past the batch record bound', () => {
  it('a_publisher_with_a_batch_record_bound_above_the_wires_never_sends_a_batch_it_cannot_carry', async () => {
    const sizes: number[] = [];
    let next = 0;
    const send = async (payloads: Uint8Array[]) => {
      sizes.push(payloads.length);
      // What FelixClient.publishBatch does with such a batch (client.ts): refuses it whole.
      if (payloads.length > PUBLISH_BATCH_RECORDS_MAX)
        throw new InvalidArgumentError(
          `a batch carries at most ${PUBLISH_BATCH_RECORDS_MAX} records, got ${payloads.length} (split it)`,
        );
      const offset = next;
      next += payloads.length;
      return { offset, shard: 0 };
    };
    let pub: Publisher;
    try {
      pub = new Publisher('s', send, { maxBatchRecords: 100_000, lingerMs: 60_000 });
    } catch (err) {
      // Refusing the option at the call is a fix too: nothing was accepted, nothing is lost.
      expect(err).toBeInstanceOf(InvalidArgumentError);
      return;
    }
    const one = new Uint8Array([1]);
    const records = PUBLISH_BATCH_RECORDS_MAX + 10_000;
    for (let i = 0; i < records; i++) pub.send(one);
    // Every record was accepted one by one; each is small and valid on its own.
    await expect(pub.flush()).resolves.toBeUndefined();
    expect(Math.max(...sizes)).toBeLessThanOrEqual(PUBLISH_BATCH_RECORDS_MAX);
    expect(next).toBe(records);
    await pub.close();
  });

  it('a_publisher_refuses_options_it_cannot_keep', () => {
    const send = async () => ({ offset: 0, shard: 0 });
    for (const opts of [
      { maxBatchRecords: Number.NaN },
      { maxBatchRecords: 1.5 },
      { maxBatchRecords: 0 },
      { maxBatchBytes: Number.NaN },
      { lingerMs: Number.NaN },
      { lingerMs: Number.POSITIVE_INFINITY },
      { lingerMs: -1 },
    ]) {
      expect(() => new Publisher('s', send, opts), JSON.stringify(opts)).toThrow(
        InvalidArgumentError,
      );
    }
    expect(
      () => new Publisher('s', send, { maxBatchRecords: PUBLISH_BATCH_RECORDS_MAX }),
    ).not.toThrow();
  });
});
