// Goal: a broker whose connection stays up but that never answers a request on a request stream
// (the connection's request stream: cache, counter, group and cluster calls, `offset_for_time`;
// a group poll's stream of its own) does not hold the caller for as long as the connection
// lives: the oldest request's answer is due within requestTimeoutMs (a poll's past its own
// wait), checked every CONNECTION_CHECK_MS with no timer of its own; then every request on the
// stream fails, a read with TimeoutError and a write with OutcomeUnknownError (it may have been
// applied), the stream is reset, and the next request opens a new one, so a late answer is never
// taken for a later request's. Method: FelixClient over the scripted fake broker, whose `answer`
// hook swallows what the test names; its connection reports no packet counts, so the client's
// silence check (a dead broker) ends nothing here.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ClusterRouter } from '../src/cluster/router.js';
import { OutcomeUnknownError, TimeoutError } from '../src/errors.js';
import { SUBSCRIBE_UNANSWERED_RETRIES_MAX } from '../src/limits.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { FakeBroker, type FakeStream, clientOver } from './fake-broker.js';

/** The client's request timeout here. */
const BOUND_MS = 200;
/** Far beyond what the bounds and checks take: a hang fails here. */
const ENDS_WITHIN_MS = 10_000;

type Swallowed = { at: FakeStream; msg: Message };

/** A client over a broker that answers nothing `silent` picks; what it swallows is kept. The
 *  cache and counter calls it answers get a value of their own (`v` and 3n). */
function rig(silent: (msg: Message) => boolean) {
  const broker = new FakeBroker({ reauth: false });
  const swallowed: Swallowed[] = [];
  broker.answer = (at, msg) => {
    if (silent(msg)) {
      swallowed.push({ at, msg });
      return true;
    }
    return answerData(at, msg);
  };
  const connecting = clientOver(broker, BOUND_MS);
  return { broker, connecting, swallowed };
}

/** The fake broker's answers to the data calls these tests make (it has none of its own). */
function answerData(at: FakeStream, msg: Message): boolean {
  const request_id = ('request_id' in msg ? msg.request_id : undefined) ?? 0;
  if (msg.type === 'cache_get')
    at.send({ type: 'cache_value', key: msg.key, value: bytes('v'), request_id });
  else if (msg.type === 'cache_put') at.send({ type: 'cache_ok', request_id });
  else if (msg.type === 'counter_get') at.send({ type: 'counter_value', value: 3n, request_id });
  else return false;
  return true;
}

const bytes = (s: string) => new TextEncoder().encode(s);

/** How long `p` took to settle, and how it did. */
async function timed<T>(p: Promise<T>): Promise<{ ms: number; outcome: Promise<T> }> {
  const started = performance.now();
  await withDeadline(
    p.then(
      () => undefined,
      () => undefined,
    ),
    ENDS_WITHIN_MS,
    'the call to end',
  );
  return { ms: performance.now() - started, outcome: p };
}

describe('a request the broker never answers', () => {
  it('a_cache_get_the_broker_never_answers_fails_typed_within_its_deadline', async () => {
    const { connecting, swallowed } = rig((msg) => msg.type === 'cache_get');
    const client = await connecting;
    try {
      const { ms, outcome } = await timed(client.cache('users').get('u1'));
      await expect(outcome).rejects.toBeInstanceOf(TimeoutError);
      await expect(outcome).rejects.toMatchObject({ code: 'FELIX_CLIENT_TIMEOUT', retry: 'retry' });
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS);
      // The stream it waited on is given up: reset, so nothing read from it later.
      expect(swallowed.map(({ at }) => at.isReset)).toEqual([true]);
    } finally {
      await client.close();
    }
  });

  it('a_cache_put_the_broker_never_answers_fails_with_an_unknown_outcome', async () => {
    const { connecting, swallowed } = rig((msg) => msg.type === 'cache_put');
    const client = await connecting;
    try {
      const { ms, outcome } = await timed(client.cache('users').put('u1', 'v'));
      await expect(outcome).rejects.toBeInstanceOf(OutcomeUnknownError);
      await expect(outcome).rejects.toMatchObject({
        retry: 'unknown_outcome',
        cause: expect.any(TimeoutError),
      });
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS);
      expect(swallowed[0]!.at.isReset).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('a_counter_add_the_broker_never_answers_fails_with_an_unknown_outcome', async () => {
    const { connecting } = rig((msg) => msg.type === 'counter_add');
    const client = await connecting;
    try {
      const { outcome } = await timed(client.counter('hits').add('k', 1n));
      await expect(outcome).rejects.toBeInstanceOf(OutcomeUnknownError);
      await expect(outcome).rejects.toMatchObject({ cause: expect.any(TimeoutError) });
    } finally {
      await client.close();
    }
  });

  it('every_request_behind_an_unanswered_one_fails_with_it_reads_timed_out_and_writes_unknown', async () => {
    // The oldest is swallowed; the broker answers in order, so nothing behind it is answered.
    const { broker, connecting } = rig((msg) => msg.type !== 'auth');
    const client = await connecting;
    try {
      const cache = client.cache('users');
      const group = client.group('orders', 'billing');
      const reads = [
        cache.get('u1'),
        client.counter('hits').get('k'),
        group.describe(),
        group.deadLetters(),
        client.offsetForTime('orders', new Date(0)),
      ];
      const writes = [
        cache.delete('u1'),
        client.counter('hits').add('k', 1n),
        group.ack(5),
        group.nack(6, 1),
        group.redrive(7),
        group.discard(8),
        group.seek('latest'),
        group.delete(),
      ];
      await withDeadline(Promise.allSettled([...reads, ...writes]), ENDS_WITHIN_MS, 'all to end');
      for (const r of reads) await expect(r).rejects.toBeInstanceOf(TimeoutError);
      for (const w of writes) await expect(w).rejects.toBeInstanceOf(OutcomeUnknownError);
      // Every one of them was sent, on the one stream that was reset.
      const lanes = new Set(
        broker.received.filter(({ msg }) => msg.type !== 'auth').map(({ stream }) => stream),
      );
      expect([...lanes].map((s) => s.isReset)).toEqual([true]);
    } finally {
      await client.close();
    }
  });

  it('a_request_after_a_lane_timed_out_is_answered_on_a_new_stream', async () => {
    let gets = 0;
    const { connecting, swallowed } = rig((msg) => msg.type === 'cache_get' && ++gets === 1);
    const client = await connecting;
    try {
      const cache = client.cache('users');
      const { outcome } = await timed(cache.get('u1'));
      await expect(outcome).rejects.toBeInstanceOf(TimeoutError);
      // The first get's answer comes late, on the stream given up: nobody reads it, and the next
      // get is answered with its own value on a new stream.
      const { at, msg } = swallowed[0]!;
      const rid = (msg as { request_id: number }).request_id;
      at.send({ type: 'cache_value', key: 'u1', value: bytes('late'), request_id: rid });
      const again = await withDeadline(cache.get('u2'), ENDS_WITHIN_MS, 'the next get');
      expect(new TextDecoder().decode(again)).toBe('v');
      expect(await client.counter('hits').get('k')).toBe(3n);
    } finally {
      await client.close();
    }
  });

  it('a_group_poll_the_broker_never_answers_fails_typed_after_its_wait_and_deadline', async () => {
    const { connecting, swallowed } = rig((msg) => msg.type === 'group_poll');
    const client = await connecting;
    const waitMs = 100;
    try {
      const group = client.group('orders', 'billing');
      const { ms, outcome } = await timed(group.poll({ waitMs }));
      await expect(outcome).rejects.toBeInstanceOf(TimeoutError);
      await expect(outcome).rejects.toMatchObject({ retry: 'retry' });
      // The broker's own wait is not held against it: the bound starts past it.
      expect(ms).toBeGreaterThanOrEqual(waitMs + BOUND_MS);
      expect(swallowed[0]!.at.isReset).toBe(true);
      // The next poll goes on a stream of its own, not the one given up.
      void group.poll({ waitMs }).catch(() => undefined);
      await waitFor(() => swallowed.length === 2 || undefined, 'the next poll to be sent');
      expect(swallowed[1]!.at).not.toBe(swallowed[0]!.at);
    } finally {
      await client.close();
    }
  });

  it('a_subscription_from_a_time_the_broker_never_resolves_fails_typed_within_its_deadline', async () => {
    const { connecting, swallowed } = rig((msg) => msg.type === 'offset_for_time');
    const client = await connecting;
    try {
      const sub = client.subscribe('orders', { shard: 0, from: { time: new Date(0) } });
      const { outcome } = await timed(sub[Symbol.asyncIterator]().next());
      await expect(outcome).rejects.toBeInstanceOf(TimeoutError);
      // Asked again once (an answer may be lost), then ended, never subscribed.
      expect(swallowed).toHaveLength(SUBSCRIBE_UNANSWERED_RETRIES_MAX + 1);
      expect(swallowed.every(({ at }) => at.isReset)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('a_shard_owner_lookup_the_broker_never_answers_fails_typed_within_its_deadline', async () => {
    const broker = new FakeBroker({ reauth: false, cluster: true });
    broker.answer = (_at, msg) => msg.type === 'shard_owners' || msg.type === 'topology';
    const conn = await BrokerConnection.over(
      'quic://fake:1',
      broker.conn,
      {
        tenant: 't1',
        namespace: 'default',
        token: 'x',
        tls: {},
        connectTimeoutMs: BOUND_MS,
        idleTimeoutMs: 15_000,
        requestTimeoutMs: BOUND_MS,
      },
      new TurnBatcher(),
    );
    const router = new ClusterRouter({
      entry: async () => conn,
      liveEntry: () => conn,
      open: () => Promise.reject(new Error('no dial in this test')),
    });
    try {
      const asked = router.refreshOwners('stream', 'orders');
      const { outcome } = await timed(asked);
      await expect(outcome).rejects.toBeInstanceOf(TimeoutError);
    } finally {
      await router.close();
      await conn.close();
    }
  });
});
