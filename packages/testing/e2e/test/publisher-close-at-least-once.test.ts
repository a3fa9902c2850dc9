// Goal: dda750f3 says `client.close()` sends what publishers still gather ("send() then close()
// dropped them, silently") and waits for it: README "Publish", `client.close()` waits "until the
// broker has read every publish made before it ... so a fire-and-forget loop followed by close()
// loses nothing". A publisher made with `atLeastOnce: true` (or any publisher of a client routing
// by owner, a cluster) sends its batches through the routed path, which awaits the shard's owner
// before its frame is written: the close goes on past its drain meanwhile, and the batch meets a
// closed client (ClientClosedError, swallowed for `send()` records, nobody flushes after a close).
// Method: one real broker; records accepted by `send()` of an `atLeastOnce` publisher with a
// linger, then `client.close()`; a fresh client reads the stream back from `earliest`.
import type { FelixClient } from '@felix/client';
import { tempDir, withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { client, text } from './support.js';

const YAML = `
streams:
  - { tenant: t1, name: pub-routed-close, durable: true, fsync: onCommit }
`;
const enc = (s: string) => new TextEncoder().encode(s);

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
      3_000,
      `${n} records of ${stream}`,
      // Fewer than n by the deadline: the comparison below names what was missing.
    ).catch(() => undefined);
  } finally {
    await it.return?.();
  }
  return got;
}

describe('an at-least-once publisher and a client close', () => {
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
