// Found by a review: b5d349ae makes client.close() wait (bounded) for the sends its publishers still
// have out, through GatheringPublishers.closeAll(). A publisher is in that set only while it has
// a batch gathering: one whose batch its linger (1 ms by default) already sent, still out on the
// routed path (looking its owner up), is not in the set, so close() does not wait for it.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { GatheringPublishers, Publisher } from '../src/publisher.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('close and a publisher batch already sent', () => {
  it('close_waits_for_a_batch_its_linger_sent_just_before', async () => {
    const gp = new GatheringPublishers();
    let sends = 0;
    // The routed path: the owner lookup takes a while before the frame is written.
    const sendRecords = async () => {
      sends++;
      await sleep(200);
      return { offset: 0, shard: 0 };
    };
    const p = new Publisher('s', sendRecords as never, {}, new TurnBatcher(), gp);
    expect(p.send(new Uint8Array([1]))).toBe(true);
    // The default 1 ms linger sends the batch; it is then still on its way.
    await waitFor(() => sends === 1 || undefined, 'the batch sent', 2_000);
    // client.close() adds these to what it waits for before closing connections.
    expect(gp.closeAll()).toHaveLength(1);
  });

  it('a_publisher_batch_still_gathering_at_close_is_waited_for', async () => {
    const gp = new GatheringPublishers();
    const sendRecords = async () => {
      await sleep(200);
      return { offset: 0, shard: 0 };
    };
    const p = new Publisher('s', sendRecords as never, { lingerMs: 50 }, new TurnBatcher(), gp);
    expect(p.send(new Uint8Array([1]))).toBe(true);
    expect(gp.closeAll()).toHaveLength(1);
  });
});
