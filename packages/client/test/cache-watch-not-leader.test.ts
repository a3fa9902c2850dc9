// Goal: a watch refused `not_leader` that the client cannot follow (no cluster routing, as
// against a broker without discovery or with `routing: false`) ends typed, as a subscription
// does, instead of re-watching the same broker for ever and yielding nothing.
// Method: FelixClient over the scripted fake broker (no `shard_owners`, so no routing), which
// answers every `cache_watch` `not_leader`; the watch's signal is a deadline, whose abort would
// end the watch quietly, so a watch that never ends fails the test rather than hangs it.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { NotLeaderError } from '../src/errors.js';
import { NOT_LEADER_RESUBSCRIBES_MAX } from '../src/limits.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

describe('a watch refused not_leader', () => {
  it('a_watch_refused_not_leader_without_routing_ends_with_not_leader_error', async () => {
    const broker = new FakeBroker({ reauth: false });
    const client = await FelixClient.create(
      { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
      { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
    );
    let watches = 0;
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'cache_watch') return false;
      watches++;
      at.send({ type: 'not_leader', node_id: 'n2', addr: 'quic://other:1', generation: 1 });
      return true;
    };
    try {
      const signal = AbortSignal.timeout(20_000);
      const watch = client.cache('users').watch({ key: 'u1' }, { signal });
      await expect(watch[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(NotLeaderError);
    } finally {
      await client.close();
    }
    expect(watches).toBe(NOT_LEADER_RESUBSCRIBES_MAX + 1);
  });
});
