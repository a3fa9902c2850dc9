// Goal: a consumer group over every shard of a stream (`suite.felix.group(s, g, { shard: 'all' })`), as
// a Kafka consumer group reads every partition: one consume loop hands out the records of every
// shard once each, named by shard; each shard keeps its own cursor under the group's name; a loop
// ended early hands back what it held (nothing waits out its visibility timeout); and a one-shard
// handle (the default, shard 0) still reads shard 0 alone.
// Method: one durable felix-broker process with a 4-shard stream, driven through @felix/client
// over TLS; records published under keys that spread them over the shards.
import {
  type GroupInfo,
  type GroupMessage,
  InvalidArgumentError,
  type ShardGroupInfo,
  UnknownStreamError,
} from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { client, suiteBroker, text } from './support.js';

const SHARDS = 4;

/** A describe() row of a shard the group exists on (a test of it fails on a missing one). */
function present(row: ShardGroupInfo): GroupInfo & { shard: number } {
  if ('missing' in row) throw new Error(`the group is missing on shard ${row.shard}`);
  return row;
}

describe('a consumer group over every shard of a stream', () => {
  const suite = suiteBroker(
    `streams:\n  - { tenant: t1, name: orders, durable: true, shards: ${SHARDS} }\n`,
  );

  /** Publishes `n` records under keys that land on every shard; answers value → shard. */
  async function publishSpread(tag: string, n: number): Promise<Map<string, number>> {
    const where = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const value = `${tag}-${i}`;
      const { shard } = await suite.felix.publish('orders', value, { key: `customer-${i}` });
      expect(shard).not.toBeNull(); // an acked publish names its shard
      where.set(value, shard!);
    }
    expect(new Set(where.values()).size).toBe(SHARDS);
    return where;
  }

  /** Starts the group at the tail of every shard (each shard's group exists from then on). */
  async function freshGroup(name: string) {
    const group = suite.felix.group('orders', name, { shard: 'all' });
    for (const g of await group.shards()) await g.seek('latest');
    return { group };
  }

  it('a_group_over_every_shard_hands_out_each_shards_records_once_from_one_loop', async () => {
    const { group } = await freshGroup('billing');
    const where = await publishSpread('all', 40);
    const seen = new Map<string, number>();
    for await (const msg of group.consume({ max: 8 })) {
      const value = text(msg.payload)!;
      expect(seen.has(value)).toBe(false);
      seen.set(value, msg.shard);
      expect(msg.attempts).toBe(1);
      await msg.ack();
      if (seen.size === where.size) break;
    }
    expect(seen).toEqual(where);
    // Each shard's cursor passed its own records.
    const infos = (await group.describe()).map(present);
    expect(infos).toHaveLength(SHARDS);
    for (const info of infos) {
      expect(info.committed).toBe(info.tail);
      expect(info.inFlight).toBe(0);
    }
  });

  it('a_group_over_every_shard_ended_early_hands_back_what_it_held', async () => {
    const { group } = await freshGroup('early');
    const where = await publishSpread('early', 24);
    let first: GroupMessage | undefined;
    for await (const msg of group.consume({ max: 4, visibilityMs: 120_000 })) {
      first = msg;
      break;
    }
    await first!.ack();
    // What the first loop held beyond its one record went back at its end, not to lapse in two
    // minutes: a second loop gets every other record, none counted as a second attempt.
    const rest = new Map<string, number>();
    const ac = new AbortController();
    const done = (async () => {
      for await (const msg of group.consume({ max: 4, signal: ac.signal })) {
        rest.set(text(msg.payload)!, msg.attempts);
        await msg.ack();
        if (rest.size === where.size - 1) return;
      }
    })();
    await waitFor(() => rest.size === where.size - 1, 'the records handed back', 30_000);
    ac.abort();
    await done;
    expect(rest.has(text(first!.payload)!)).toBe(false);
    expect([...rest.values()].every((attempts) => attempts === 1)).toBe(true);
  });

  it('a_group_handle_without_a_shard_reads_shard_0_alone', async () => {
    const { group } = await freshGroup('one');
    const where = await publishSpread('one', 16);
    const onZero = [...where].filter(([, shard]) => shard === 0).map(([value]) => value);
    const zero = suite.felix.group('orders', 'one');
    const got: string[] = [];
    while (got.length < onZero.length) {
      const msgs = await zero.poll({ max: 16, waitMs: 2_000 });
      for (const m of msgs) {
        expect(m.shard).toBe(0);
        got.push(text(m.payload)!);
        await m.ack();
      }
    }
    expect(got.sort()).toEqual(onZero.sort());
    // The other shards' records are still there for the group, untouched.
    const infos = (await group.describe()).map(present);
    expect(infos[0]!.committed).toBe(infos[0]!.tail);
    for (const info of infos.slice(1)) expect(info.committed).toBeLessThan(info.tail);
  });

  it('a_group_over_every_shard_ends_on_its_signal_and_on_an_unknown_stream', async () => {
    const { group } = await freshGroup('signal');
    const ac = new AbortController();
    const it = group.consume({ signal: ac.signal })[Symbol.asyncIterator]();
    const waiting = it.next(); // nothing published: every shard's poll waits
    ac.abort();
    expect(await waiting).toEqual({ value: undefined, done: true });
    const unknown = suite.felix.group('no-such-stream', 'g', { shard: 'all' });
    await expect(unknown.consume()[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(
      UnknownStreamError,
    );
  });

  it('a_group_over_every_shard_describes_a_group_that_exists_on_some_shards_only', async () => {
    // A group used one shard at a time (the default handle reads shard 0) and then read over
    // every shard, as an application moving to `shard: 'all'` does: shard 0's group exists, the
    // others do not yet. Its merged describe() answers a row per shard, as `kafka-consumer-groups
    // --describe` lists a group's partitions, instead of failing with "group not found" because
    // one shard never saw a poll (and `felixctl group redrive --shard all` with it, after it had
    // already redriven shard 0's dead letters).
    const zero = suite.felix.group('orders', 'partial');
    await zero.seek('latest', { ifNew: true });
    const own = await zero.describe();
    const infos = await suite.felix.group('orders', 'partial', { shard: 'all' }).describe();
    expect(infos).toHaveLength(SHARDS);
    expect(infos[0]).toMatchObject({ shard: 0, committed: own.committed });
    expect(infos.slice(1)).toEqual([
      { shard: 1, missing: true },
      { shard: 2, missing: true },
      { shard: 3, missing: true },
    ]);
  });

  it('a_group_over_every_shard_seeks_every_shard_and_deletes_them_all_in_one_call', async () => {
    // A Kafka user's trial: starting a group at the tail (auto.offset.reset=latest) or dropping
    // it took a loop over `shards()`; the merged handle had neither seek nor delete.
    await publishSpread('before-seek', 12);
    const group = suite.felix.group('orders', 'from-the-tail', { shard: 'all' });
    const moved = await group.seek('latest', { ifNew: true });
    expect(moved.map((m) => m.shard)).toEqual([0, 1, 2, 3]);
    const infos = (await group.describe()).map(present);
    for (const info of infos) expect(info.committed).toBe(info.tail); // each shard at its tail
    // ifNew leaves a group that exists where it is; a plain seek moves every shard.
    expect((await group.seek('earliest', { ifNew: true })).every((m) => !m.moved)).toBe(true);
    const back = await group.seek('earliest');
    expect(back.every((m) => m.moved && m.offset === 0)).toBe(true);
    await expect(group.seek({ offset: 3 } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await group.delete()).toBe(true);
    expect(await group.describe()).toEqual([0, 1, 2, 3].map((shard) => ({ shard, missing: true })));
    expect(await group.delete()).toBe(false);
  });

  it('a_one_shard_loop_broken_out_of_and_closed_at_once_hands_back_what_it_held', async () => {
    // A worker takes one job and exits: `break`, then `close()`. What its loop polled ahead must
    // go back at the break, as a merged loop's does, not lapse after its visibility timeout.
    for (const g of await suite.felix.group('orders', 'exits', { shard: 'all' }).shards())
      await g.seek('latest');
    const where = await publishSpread('exits', 24);
    const onZero = [...where].filter(([, shard]) => shard === 0).map(([value]) => value);
    const worker = await client(suite.broker);
    let first: string | undefined;
    for await (const msg of worker
      .group('orders', 'exits')
      .consume({ max: 8, visibilityMs: 120_000 })) {
      first = text(msg.payload);
      await msg.ack();
      break;
    }
    await worker.close();
    const rest: string[] = [];
    const deadline = Date.now() + 10_000;
    while (rest.length < onZero.length - 1 && Date.now() < deadline) {
      for (const m of await suite.felix.group('orders', 'exits').poll({ max: 16, waitMs: 1_000 })) {
        rest.push(text(m.payload)!);
        await m.ack();
      }
    }
    expect(rest.sort()).toEqual(onZero.filter((v) => v !== first).sort());
  });

  it('a_group_over_every_shard_is_refused_for_a_bad_name_at_the_call', () => {
    expect(() => suite.felix.group('orders', '', { shard: 'all' })).toThrow(InvalidArgumentError);
  });
});
