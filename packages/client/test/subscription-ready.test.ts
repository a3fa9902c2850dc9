// Goal: `Subscription.ready()` opens a subscription before anything iterates it and resolves
// only once every shard answered `subscribed`; a failure before iteration rejects it and ends the
// first `next()` with the same error, with no unhandled rejection when only one of the two is
// called; an end while it waits (signal, `close()`, `return()`) rejects it with AbortedError; it
// shares the opening a `next()` started; a subscription made ready and closed without iterating
// lets its shards go. (That a record published after `ready()` is delivered is proven against a
// real broker: `a_publish_after_ready_is_delivered_to_a_latest_subscription`.)
// Method: FelixClient over the scripted fake broker (test/fake-broker.ts), which holds or refuses
// the `subscribe` and `stream_shards` requests a test takes over.
import { waitFor } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { AbortedError, ForbiddenError, UnknownStreamError } from '../src/errors.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import type { StreamEvent } from '../src/subscription.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

type Subscribe = Extract<Message, { type: 'subscribe' }>;

/** A client over a fake broker that answers `stream_shards` with `shards`, and lets `onSubscribe`
 *  take over a `subscribe` (true: it answered, or chose silence). */
async function rig(
  shards: number,
  onSubscribe: (at: FakeStream, msg: Subscribe) => boolean = () => false,
) {
  const broker = new FakeBroker({ reauth: false });
  broker.answer = (at, msg) => {
    if (msg.type === 'stream_shards') {
      at.send({
        type: 'stream_shards_view',
        request_id: msg.request_id,
        shards,
        routing: 'jump_hash',
      } as Message);
      return true;
    }
    return msg.type === 'subscribe' && onSubscribe(at, msg);
  };
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
  const subscribes = () =>
    broker.received.flatMap(({ stream, msg }) =>
      msg.type === 'subscribe' ? [{ at: stream, msg }] : [],
    );
  return { broker, client, subscribes };
}

const forbidden = (at: FakeStream) =>
  at.send({ type: 'error', code: 'forbidden', message: 'no stream.subscribe' } as Message);

/** Answers a held subscribe as the broker does: `subscribed`, then its event stream. */
function answer(broker: FakeBroker, at: FakeStream, msg: Subscribe): void {
  const id = msg.subscription_id!;
  at.send({ type: 'subscribed', subscription_id: id, start_offset: 5, live_offset: 5 });
  broker.openEvents(id);
}

describe('Subscription.ready()', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });

  it('a_subscription_refused_before_iteration_rejects_ready_and_its_first_next', async () => {
    // One shard refused, a merged one with its second shard refused, an unknown stream.
    const cases = [
      { name: 'one shard', shards: 1, opts: { shard: 0 }, type: ForbiddenError },
      { name: 'merged', shards: 3, opts: {}, type: ForbiddenError },
      { name: 'unknown stream', shards: 0, opts: {}, type: UnknownStreamError },
    ];
    for (const c of cases) {
      const { broker, client, subscribes } = await rig(c.shards, (at, msg) => {
        if (msg.shard !== (c.shards === 3 ? 1 : 0)) return false;
        forbidden(at);
        return true;
      });
      try {
        const sub = client.subscribe('orders', c.opts);
        const err = await sub.ready().catch((e: unknown) => e);
        expect(err, c.name).toBeInstanceOf(c.type);
        // The shards that did subscribe are let go at once, not only once something iterates.
        await waitFor(
          () =>
            broker.events.size === (c.shards === 3 ? 2 : 0) &&
            [...broker.events.values()].every((s) => s.isReset),
          `${c.name}: the subscribed shards released`,
        );
        // The iterator ends with the very same error, not with another attempt.
        const before = subscribes().length;
        await expect(sub[Symbol.asyncIterator]().next(), c.name).rejects.toBe(err);
        expect(subscribes(), c.name).toHaveLength(before);
        // Only one of the two called: the failure surfaces there and nowhere else.
        await expect(client.subscribe('orders', c.opts).ready(), c.name).rejects.toBeInstanceOf(
          c.type,
        );
        const onlyNext = client.subscribe('orders', c.opts)[Symbol.asyncIterator]().next();
        await expect(onlyNext, c.name).rejects.toBeInstanceOf(c.type);
        await new Promise<void>((resolve) => setImmediate(resolve)); // rejections are told here
        expect(unhandled, c.name).toEqual([]);
      } finally {
        await client.close();
      }
    }
  });

  it('a_subscription_ended_while_ready_waits_rejects_ready_with_aborted_error', async () => {
    for (const end of ['signal', 'close', 'return'] as const) {
      const { client, subscribes } = await rig(1, () => true); // the subscribe is never answered
      try {
        const ac = new AbortController();
        const sub = client.subscribe('orders', { shard: 0, signal: ac.signal });
        const it = sub[Symbol.asyncIterator]();
        const ready = sub.ready();
        await waitFor(() => subscribes().length === 1, 'the subscribe reaches the broker');
        if (end === 'signal') ac.abort();
        else if (end === 'close') sub.close();
        else await it.return?.();
        await expect(ready, end).rejects.toBeInstanceOf(AbortedError);
        // The iterator ends as an aborted opening ends it: done, not failed.
        await expect(it.next(), end).resolves.toMatchObject({ done: true });
      } finally {
        await client.close();
      }
    }
  });

  it('ready_resolves_only_once_every_shard_answered_and_shares_the_opening_of_a_next', async () => {
    for (const first of ['ready', 'next'] as const) {
      const { broker, client, subscribes } = await rig(3, () => true); // held until answered
      try {
        const sub = client.subscribe('orders');
        const it = sub[Symbol.asyncIterator]();
        const pending = first === 'next' ? it.next() : undefined;
        let resolved = false;
        const ready = sub.ready().then(() => {
          resolved = true;
        });
        await waitFor(() => subscribes().length === 3, 'a subscribe per shard');
        const held = subscribes();
        answer(broker, held[0]!.at, held[0]!.msg);
        answer(broker, held[2]!.at, held[2]!.msg);
        await waitFor(() => broker.events.size === 2, 'two event streams open');
        expect(resolved, first).toBe(false); // shard 1 has not answered
        answer(broker, held[1]!.at, held[1]!.msg);
        await ready;
        // One subscribe per shard, whichever of ready() and next() opened it.
        expect(subscribes(), first).toHaveLength(3);
        broker.emit(held[1]!.msg.subscription_id!, 5, ['a']);
        const ev = (await (pending ?? it.next())).value as StreamEvent;
        expect([ev.shard, ev.offset, new TextDecoder().decode(ev.data)], first).toEqual([
          1,
          5,
          'a',
        ]);
        await it.return?.();
      } finally {
        await client.close();
      }
    }
  });

  it('a_subscription_made_ready_and_closed_without_iterating_releases_its_shards', async () => {
    const { broker, client } = await rig(3);
    try {
      const sub = client.subscribe('orders');
      await sub.ready();
      expect(broker.events.size).toBe(3);
      sub.close();
      await waitFor(
        () => [...broker.events.values()].every((s) => s.isReset),
        'every shard released',
      );
    } finally {
      await client.close();
    }
  });
});
