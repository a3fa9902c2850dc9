// Goal: `close()` ends a client's readers quietly against a real broker, over both transports:
// a subscription after its first record, a cache watch and a `consume()` loop each waiting on a
// live stream finish their `for await` (done, no throw), while a publish after the close rejects
// with ClientClosedError. The unit test of the same
// (`readers_end_done_at_close_while_calls_reject_with_client_closed_error`) runs over a fake
// transport; this one shows the real transports end the readers' streams at the close. Method:
// one durable felix-broker process; per transport, one client with the three readers waiting.
import { ClientClosedError } from '@felix/client';
import { withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../src/index.js';
import { TRANSPORTS, client, startProjectionsBroker } from './support.js';

const DONE = { value: undefined, done: true };

describe('a client closing with readers open', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ broker, cleanup } = await startProjectionsBroker());
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('readers_waiting_on_a_real_broker_end_done_when_their_client_closes', async () => {
    for (const transport of TRANSPORTS) {
      const felix = await client(broker, transport);
      const sub = felix.subscribe('jobs', { shard: 0 });
      await sub.ready();
      const it = sub[Symbol.asyncIterator]();
      const first = it.next();
      await felix.publish('jobs', `close-${transport}`);
      expect((await first).done, transport).toBe(false);
      const reading = it.next(); // nothing more is published: waits
      // Retained: its first event (state_complete) says the watch is open; the next one waits.
      const watch = felix
        .cache('users')
        .watch({ key: `close-${transport}` }, { retained: true })
        [Symbol.asyncIterator]();
      expect((await watch.next()).value, transport).toMatchObject({ type: 'state_complete' });
      const watching = watch.next();
      // A group made now starts at the earliest record: skip what is there, so its poll waits.
      const group = felix.group('jobs', `close-${transport}`, { shard: 0 });
      await group.seek('latest', { ifNew: true });
      const consuming = group.consume({ waitMs: 10_000 })[Symbol.asyncIterator]().next();

      await felix.close();
      const ended = await withDeadline(
        Promise.all([reading, watching, consuming]),
        10_000,
        `every reader to end at the close over ${transport}`,
      );
      expect(ended, transport).toEqual([DONE, DONE, DONE]);
      await expect(felix.publish('jobs', 'x')).rejects.toBeInstanceOf(ClientClosedError);
    }
  }, 60_000);
});
