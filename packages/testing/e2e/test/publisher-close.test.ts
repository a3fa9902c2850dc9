// Goal: what a batching publisher (`felix.publisher()`) accepted before a close reaches the broker
// or is refused: README "Publish" says `client.close()` first waits "until the broker has read
// every publish made before it ... so a fire-and-forget loop followed by close() loses nothing",
// and `Publisher.close()` "Flushes, then refuses further publishes".
// A publisher made with `atLeastOnce: true` (or any publisher of a client routing by owner, a
// cluster) sends its batches through the routed path, which awaits the shard's owner before its
// frame is written: the close waits for those too (found by a review: it went on past its drain
// and the batch met a closed client, swallowed for `send()` records).
// Method: one real broker; records accepted by `send()`/`publish()` of a publisher with a linger,
// then a close; a fresh client reads the stream back from `earliest`.
import type { FelixClient } from '@felix/client';
import { tempDir, withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { client, text } from './support.js';

const YAML = `
streams:
  - { tenant: t1, name: pub-acked, durable: true, fsync: onCommit }
  - { tenant: t1, name: pub-unacked, durable: true, fsync: onCommit }
  - { tenant: t1, name: pub-closing, durable: true, fsync: onCommit }
  - { tenant: t1, name: pub-routed-close, durable: true, fsync: onCommit }
`;
const enc = (s: string) => new TextEncoder().encode(s);

/** The payloads of `stream` from `earliest`, once `n` are there (fails past the deadline). */
async function readBack(felix: FelixClient, stream: string, n: number): Promise<string[]> {
  const got: string[] = [];
  const it = felix.subscribe(stream, { shard: 0, from: 'earliest' })[Symbol.asyncIterator]();
  try {
    await withDeadline(
      (async () => {
        while (got.length < n) {
          const r = await it.next();
          if (r.done) return;
          got.push(text(r.value.data)!);
        }
      })(),
      5_000,
      `${n} records of ${stream}`,
      // Fewer than n by the deadline: the comparison below names what was missing.
    ).catch(() => undefined);
  } finally {
    await it.return?.();
  }
  return got;
}

describe('a batching publisher and close', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('records_sent_through_a_publisher_before_the_client_closes_reach_the_broker', async () => {
    const want = Array.from({ length: 10 }, (_, i) => `r${i}`);
    for (const [stream, ack] of [
      ['pub-acked', true],
      ['pub-unacked', false],
    ] as const) {
      const felix = await client(broker);
      const pub = felix.publisher(stream, { lingerMs: 50, ack });
      // A NATS/Kafka producer's loop: send, then close the connection.
      for (const r of want) expect(pub.send(enc(r))).toBe(true);
      await felix.close();
      const reader = await client(broker);
      try {
        expect({ stream, got: await readBack(reader, stream, want.length) }).toEqual({
          stream,
          got: want,
        });
      } finally {
        await reader.close();
      }
    }
  });

  it('a_record_a_publisher_accepts_while_it_closes_is_settled_when_its_close_resolves', async () => {
    const felix = await client(broker);
    try {
      const pub = felix.publisher('pub-closing', { lingerMs: 10_000 });
      const first = pub.publish(enc('before-close'));
      const closing = pub.close();
      // Accepted (no throw, a promise) although close() has begun.
      const late = pub.publish(enc('during-close')).then(
        () => 'settled',
        () => 'settled',
      );
      await closing;
      await first;
      // Flushed or refused by the close it was made during: nothing of this publisher may be
      // left waiting out its linger once close() has resolved (its microtasks run first).
      const state = await Promise.race([
        late,
        new Promise<string>((ok) => setImmediate(() => ok('still waiting for its linger'))),
      ]);
      expect(state).toBe('settled');
    } finally {
      await felix.close();
    }
  }, 30_000);

  it('records_an_at_least_once_publisher_gathers_reach_the_broker_when_the_client_closes', async () => {
    const want = Array.from({ length: 10 }, (_, i) => `r${i}`);
    const felix = await client(broker);
    // Warm: the stream's width is known, the connection open (the common case of a long run).
    await felix.publisher('pub-routed-close', { atLeastOnce: true }).publish(enc('warm'));
    const pub = felix.publisher('pub-routed-close', { lingerMs: 50, atLeastOnce: true });
    for (const r of want) expect(pub.send(enc(r))).toBe(true);
    await felix.close();
    const reader = await client(broker);
    try {
      expect(await readBack(reader, 'pub-routed-close', want.length + 1)).toEqual([
        'warm',
        ...want,
      ]);
    } finally {
      await reader.close();
    }
  }, 30_000);
});
