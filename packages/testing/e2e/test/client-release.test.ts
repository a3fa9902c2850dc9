// Goal: a long-lived client keeps nothing of a subscription or a cache watch once it has ended,
// over both transports. Each one's reserved event stream used to stay reachable from the
// connection's loss promise (one `then` per reservation, for as long as the connection lived),
// and with it the subscription: about 52 KB per subscribe-and-break over QUIC, found by a
// new-user trial (400 cycles took a client's heap from 9 to 94 MB). Method: one durable
// felix-broker process; per transport, one client subscribes (or watches) and breaks out again
// and again, keeping only weak references, which a forced collection must clear.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../src/index.js';
import { TRANSPORTS, client, startProjectionsBroker } from './support.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CYCLES = 10;

/** Every referent collected once collections run (waited on: a collection may need a turn). */
async function collected(refs: WeakRef<object>[], what: string): Promise<void> {
  await waitFor(() => {
    gc();
    return refs.every((r) => r.deref() === undefined);
  }, what);
}

/**
 * One subscription and one retained watch, each read once and ended; only weak references leave.
 * (Its own function: a suspended caller's frame may still hold its last loop values.)
 */
async function readAndEnd(felix: FelixClient, transport: string, refs: WeakRef<object>[]) {
  const sub = felix.subscribe('jobs', { shard: 0, from: 'earliest' });
  const it = sub[Symbol.asyncIterator]();
  refs.push(new WeakRef(sub), new WeakRef(it));
  expect((await it.next()).done, transport).toBe(false);
  await it.return?.();
  const watch = felix
    .cache('users')
    .watch({ key: `release-${transport}` }, { retained: true })
    [Symbol.asyncIterator]();
  refs.push(new WeakRef(watch));
  expect((await watch.next()).value, transport).toMatchObject({ type: 'state_complete' });
  await watch.return?.();
}

describe('a long-lived client releases what it ended', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ broker, cleanup } = await startProjectionsBroker());
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('a_long_lived_client_keeps_nothing_of_the_subscriptions_and_watches_it_ended', async () => {
    for (const transport of TRANSPORTS) {
      const felix = await client(broker, transport);
      try {
        await felix.publish('jobs', `release-${transport}`);
        const refs: WeakRef<object>[] = [];
        for (let i = 0; i < CYCLES; i++) await readAndEnd(felix, transport, refs);
        await collected(refs, `the ended readers over ${transport} to be collected`);
      } finally {
        await felix.close();
      }
    }
  }, 60_000);
});
