// Goal: a subscription and a cache watch outlive a broker outage longer than the client's
// request timeout (a broker killed and restarted a minute and a half later, the client's
// `requestTimeoutMs` 30 s): each wait for the reconnect that times out is waited again, for as
// long as the client keeps reconnecting, and the reader resumes on the restarted broker from the
// next offset it had not delivered (no gap, nothing twice). Before, the watch ended with the
// first TimeoutError of that wait and a subscription with the second. Method: FelixClient over
// the scripted fake broker, with short request and reconnect bounds; while the broker is down
// every dial is refused (ECONNREFUSED), and the restarted broker is a new fake broker; each
// scenario runs against one broker and against one offering cluster routing. Also: the backoff
// between such retries ends at once when the client closes.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it, vi } from 'vitest';
import { FelixClient } from '../src/client.js';
import type { CacheWatchEvent } from '../src/projections/cache.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import type { StatusEvent } from '../src/status.js';
import { FakeBroker, type FakeStream, clientOver, refuseOverloaded } from './fake-broker.js';

/** The client's connect and request timeouts here. */
const BOUND_MS = 150;
/** How long the broker stays down: several request timeouts (the trial's 95 s against 30 s). */
const OUTAGE_MS = 5 * BOUND_MS;
/** Far beyond the outage and the reconnect after it: a reader that hangs fails here. */
const RESUMES_WITHIN_MS = 10_000;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** A client whose broker `kill()` takes down for OUTAGE_MS; `answer` scripts each broker (the
 *  restarted one is the second). */
async function outageRig(
  cluster: boolean,
  answer: (b: FakeBroker, at: FakeStream, msg: Message) => boolean,
) {
  const brokers: FakeBroker[] = [];
  let downSinceMs: number | undefined;
  let refused = 0;
  const client = await FelixClient.create(
    {
      servers: ['quic://fake:1'],
      tenant: 't1',
      token: 'x',
      connectTimeoutMs: BOUND_MS,
      requestTimeoutMs: BOUND_MS,
      // Equal, as their defaults are (30 s each): a routed reader ended at its second wait.
      failoverDeadlineMs: BOUND_MS,
      reconnect: { baseMs: 10, maxDelayMs: 40 },
    },
    {
      open: (server, o, turn) => {
        if (downSinceMs !== undefined && performance.now() - downSinceMs < OUTAGE_MS) {
          refused++;
          return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5000'));
        }
        const b = new FakeBroker({ reauth: false, cluster });
        b.answer = (at, msg) => answer(b, at, msg);
        brokers.push(b);
        return BrokerConnection.over(server, b.conn, o, turn);
      },
    },
  );
  const status: StatusEvent[] = [];
  void (async () => {
    for await (const e of client.status()) status.push(e);
  })();
  return {
    client,
    brokers,
    status,
    get refused() {
      return refused;
    },
    kill: () => {
      downSinceMs = performance.now();
      brokers.at(-1)!.kill();
    },
  };
}

/** A merged subscription read across the outage (`cluster`: the broker offers shard owners, so
 *  every subscribe is routed). */
async function subscriptionThroughOutage(cluster: boolean): Promise<void> {
  const asked: Array<Extract<Message, { type: 'subscribe' }>> = [];
  const rig = await outageRig(cluster, (b, at, msg) => {
    if (msg.type === 'stream_shards') {
      at.send({ type: 'stream_shards_view', request_id: msg.request_id, shards: 2 } as Message);
      return true;
    }
    if (msg.type !== 'subscribe') return false;
    asked.push(msg);
    const id = msg.subscription_id!;
    const from = typeof msg.start === 'object' ? msg.start.offset : 0;
    at.send({ type: 'subscribed', subscription_id: id, start_offset: from, live_offset: from });
    b.openEvents(id);
    // Published on the first broker before its death; on the restarted one, after it returned
    // (sent from offset 1: a record delivered before the outage must not come twice).
    const s = msg.shard;
    if (b === rig.brokers[0]) b.emit(id, 0, [`${s}a`, `${s}b`]);
    else b.emit(id, 1, [`${s}b`, `${s}c`, `${s}d`]);
    return true;
  });
  const { client } = rig;
  try {
    // Merged over both shards, as `felix.subscribe(stream)` reads.
    const it = client.subscribe('orders')[Symbol.asyncIterator]();
    const seen: string[] = [];
    const pull = async (count: number) => {
      while (seen.length < count) {
        const r = await it.next();
        if (r.done) throw new Error('the subscription ended');
        seen.push(`${r.value.shard}:${text(r.value.data)}`);
      }
    };
    await withDeadline(pull(4), RESUMES_WITHIN_MS, 'the first records');
    rig.kill();
    await withDeadline(pull(8), RESUMES_WITHIN_MS, 'the subscription to resume');
    for (const shard of [0, 1])
      expect(seen.filter((e) => e.startsWith(`${shard}:`))).toEqual(
        ['a', 'b', 'c', 'd'].map((x) => `${shard}:${shard}${x}`),
      );
    // Down for several request timeouts, and resumed from the next offset not delivered.
    expect(rig.refused).toBeGreaterThan(OUTAGE_MS / 40);
    expect(asked.slice(2)).toMatchObject([{ start: { offset: 2 } }, { start: { offset: 2 } }]);
    expect(rig.status.filter((e) => e.type === 'gap' || e.type === 'reset')).toEqual([]);
    await it.return?.();
  } finally {
    await client.close();
  }
}

/** A prefix watch read across the outage (`cluster`: routed, as above). */
async function watchThroughOutage(cluster: boolean): Promise<void> {
  const asked: Array<Extract<Message, { type: 'cache_watch' }>> = [];
  const put = (key: string, offset: number): Message => ({
    type: 'cache_event',
    key,
    value: new TextEncoder().encode(key),
    offset,
    expires_at_millis: 0,
  });
  const rig = await outageRig(cluster, (b, at, msg) => {
    if (msg.type !== 'cache_watch') return false;
    asked.push(msg);
    const id = msg.subscription_id!;
    const from = msg.from_offset ?? 0;
    at.send({
      type: 'cache_watch_started',
      subscription_id: id,
      resume_offset: from,
      resnapshot: false,
    });
    const events = b.openEvents(id);
    const changes = b === rig.brokers[0] ? ['a', 'b'] : ['b', 'c', 'd'];
    const base = b === rig.brokers[0] ? 0 : 1;
    for (const [i, k] of changes.entries()) events.send(put(k, base + i));
    return true;
  });
  const { client } = rig;
  try {
    const seen: CacheWatchEvent[] = [];
    const changed = () => seen.filter((e) => e.type === 'put').length;
    const watching = (async () => {
      for await (const ev of client.cache('users').watch({ prefix: '' })) {
        seen.push(ev);
        if (changed() === 2 && asked.length === 1) rig.kill();
        if (changed() === 4) return;
      }
      throw new Error('the watch ended');
    })();
    await withDeadline(watching, RESUMES_WITHIN_MS, 'the watch to resume');
    const keys = seen.flatMap((e) => (e.type === 'put' ? [e.key] : []));
    expect(keys).toEqual(['a', 'b', 'c', 'd']);
    // One resumption, however many attempts the outage refused: `resumed` is said when a
    // re-watch is answered (it was said at every attempt).
    expect(seen.filter((e) => e.type === 'resumed')).toEqual([{ type: 'resumed', resumeFrom: 2 }]);
    expect(rig.refused).toBeGreaterThan(OUTAGE_MS / 40);
    expect(asked.at(-1)).toMatchObject({ from_offset: 2 });
  } finally {
    await client.close();
  }
}

describe('a reader through a broker outage longer than the request timeout', () => {
  // Before, a watch ended at the first wait for the reconnect that timed out; routed, a
  // subscription and a watch ended at the second (the failover deadline, 30 s, had passed).
  it('a_subscription_outlives_a_broker_outage_longer_than_its_request_timeout', async () => {
    for (const cluster of [false, true]) await subscriptionThroughOutage(cluster);
  });

  it('a_cache_watch_outlives_a_broker_outage_longer_than_its_request_timeout', async () => {
    for (const cluster of [false, true]) await watchThroughOutage(cluster);
  });

  it('a_subscription_and_a_watch_in_a_backoff_end_at_once_when_their_client_closes', async () => {
    // Every delay at its ceiling: the sixth refusal of each is followed by a 1.6 s wait.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const broker = new FakeBroker({ reauth: false });
    const refused = refuseOverloaded(broker, ['subscribe', 'cache_watch']);
    const client = await clientOver(broker, 1_000);
    try {
      const sub = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      const watch = (async () => {
        for await (const _ of client.cache('users').watch({ prefix: '' })) return;
      })();
      await waitFor(
        () => refused.subscribe >= 6 && refused.cache_watch >= 6,
        'both readers to back off after six refusals',
      );
      const closedAt = performance.now();
      await client.close();
      await withDeadline(Promise.allSettled([sub, watch]), 1_000, 'both readers to end');
      // Ended by the close, not by the end of a 1.6 s backoff.
      expect(performance.now() - closedAt).toBeLessThan(500);
      await expect(sub).resolves.toMatchObject({ done: true });
      await expect(watch).resolves.toBeUndefined();
    } finally {
      random.mockRestore();
      await client.close();
    }
  });

  it('a_reader_backing_off_again_and_again_combines_its_signals_once', async () => {
    // Node 20 keeps every AbortSignal.any alive after it is dropped: one per backoff grew the
    // heap for as long as an outage lasted. Delays at their floor: many backoffs quickly.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0);
    const any = vi.spyOn(AbortSignal, 'any');
    const broker = new FakeBroker({ reauth: false });
    const refused = refuseOverloaded(broker, ['subscribe', 'cache_watch']);
    const client = await clientOver(broker, 1_000);
    const stop = new AbortController();
    try {
      const sub = client.subscribe('orders', { shard: 0, signal: stop.signal });
      const reading = sub[Symbol.asyncIterator]().next();
      const watch = (async () => {
        for await (const _ of client.cache('users').watch({ prefix: '' }, { signal: stop.signal }))
          return;
      })();
      await waitFor(
        () => refused.subscribe >= 20 && refused.cache_watch >= 20,
        'both readers to back off twenty times',
      );
      // One combined signal per reader, whatever the number of backoffs.
      expect(any.mock.calls.length).toBeLessThanOrEqual(2);
      stop.abort();
      await withDeadline(Promise.allSettled([reading, watch]), 5_000, 'both readers to end');
    } finally {
      any.mockRestore();
      random.mockRestore();
      await client.close();
    }
  });
});
