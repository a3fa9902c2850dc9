// Goal: a stream or cache deleted through the control plane and created again under the same
// name starts from nothing on every broker: no old record, value or counter is served, and a
// replicated stream's new generation-1 leader is not fenced by followers still holding the old
// stream's higher generation in their `replica` files.
// Method: real brokers and control plane. The old stream is taken to generation 2 by a SIGTERM
// hand-off before the delete (so its followers' replica files hold generation 2); once the
// control plane has no assignment of the deleted name left, the same name is created again
// and written; publishes must be acked and a read from offset 0 must see only new records.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { clusterPerTest, publishAll, readUpTo, served } from './support.js';

const STEP_MS = 60_000;
const TEXT = new TextDecoder();

describe('a name deleted and created again', () => {
  const holder = clusterPerTest();

  it('a_stream_created_again_under_a_deleted_name_starts_empty_and_is_served', async () => {
    const c = await startCluster({
      brokers: 3,
      replication: true,
      streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
    });
    holder.cluster = c;
    const writer = await c.connect();
    await publishAll(writer, 'orders', ['old-0', 'old-1', 'old-2']);
    // A hand-off: the old stream's replica files hold generation 2 on every broker.
    const first = (await c.leaderOf('orders'))!;
    await c.stop(first.id);
    await c.start(first.id);
    await c.waitServed();
    await publishAll(writer, 'orders', ['old-3']);
    await writer.close();
    await c.catalogCall('DELETE', '/streams/orders');
    await waitFor(
      async () => !(await c.assignments()).some((a) => a.stream === 'orders'),
      'the deleted stream to be unassigned',
      scaled(STEP_MS),
    );
    await c.catalogCall('POST', '/streams', {
      stream: 'orders',
      shards: 1,
      durable: true,
      replication_factor: 3,
      consistency: 'Quorum',
    });
    await c.waitServed();
    const client = await c.connect();
    const fresh = ['new-0', 'new-1', 'new-2'];
    await publishAll(client, 'orders', fresh);
    const seen = await readUpTo(client, 'orders', 'new-2');
    expect(seen).toEqual(fresh);
    const after = (await c.assignments()).find((a) => a.stream === 'orders')!;
    expect(after.generation).toBe(1);
    await client.close();
  }, 300_000);

  it('a_cache_created_again_under_a_deleted_name_answers_nothing_of_the_old_one', async () => {
    const c = await startCluster({ brokers: 1, caches: [{ name: 'kv', shards: 1 }] });
    holder.cluster = c;
    const client = await c.connect();
    await client.cache('kv').put('secret', 'old value');
    expect(await client.counter('kv').add('hits', 5n)).toBe(5n);
    await c.catalogCall('DELETE', '/caches/kv');
    // The broker heard of the delete: the name is unknown there.
    await waitFor(
      async () => {
        try {
          await client.cache('kv').get('secret');
          return false;
        } catch (err) {
          return (err as { code?: string }).code === 'FELIX_CLIENT_NOT_FOUND';
        }
      },
      'the deleted cache to be unknown on the broker',
      scaled(STEP_MS),
    );
    await c.catalogCall('POST', '/caches', { cache: 'kv', shards: 1 });
    const got = await served(() => client.cache('kv').get('secret'), 'the new cache to be served');
    expect(got === undefined ? undefined : TEXT.decode(got)).toBeUndefined();
    expect((await client.counter('kv').get('hits')) ?? 0n).toBe(0n);
    await client.cache('kv').put('secret', 'new value');
    expect(TEXT.decode((await client.cache('kv').get('secret'))!)).toBe('new value');
    await client.close();
  }, 120_000);
});
