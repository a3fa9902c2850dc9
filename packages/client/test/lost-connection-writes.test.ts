// Goal: a request on the connection's request stream whose connection is lost before its answer
// fails by what it was and whether it went out: a write handed to the transport (a cache put or
// delete, a counter add, a group settle, a group admin change) may have been applied, so it
// fails with OutcomeUnknownError naming it, the loss as its `cause` (retry class
// `unknown_outcome`: never sent again blindly); a read fails with the loss itself,
// ConnectionLostError (retry class `reconnect`); and a write that never went out (made while its
// stream was still opening, or still held for its turn's end) also keeps ConnectionLostError,
// as nothing was applied. Method: FelixClient over the scripted fake broker, whose `answer` hook
// swallows what the test names; `kill()` then ends the connection and every stream of it, as a
// broker that died does; in a cluster, one fake broker per address, the key's owner killed.
import { waitFor, withDeadline } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ConnectionLostError, OutcomeUnknownError, ProtocolError } from '../src/errors.js';
import { GroupMessage } from '../src/projections/group-message.js';
import { FelixClient } from '../src/client.js';
import { BrokerConnection, type ConnectionOptions } from '../src/protocol/broker-connection.js';
import type { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { FakeBroker } from './fake-broker.js';

/** The client's connect and request timeouts here: far beyond what these tests take, so no
 *  request fails by its deadline (which is unanswered-requests.test.ts's subject). */
const BOUND_MS = 30_000;
/** Far beyond what the calls take to fail: a hang fails here. */
const ENDS_WITHIN_MS = 10_000;

/** A client over a broker that swallows what `silent` picks and answers a counter get (3n) and
 *  a cache get (no value). */
function rig(silent: (msg: Message) => boolean) {
  const broker = new FakeBroker({ reauth: false });
  broker.answer = (at, msg) => {
    if (silent(msg)) return true;
    if (msg.type === 'counter_get')
      at.send({ type: 'counter_value', value: 3n, request_id: msg.request_id });
    else if (msg.type === 'cache_get')
      at.send({ type: 'cache_value', key: msg.key, request_id: msg.request_id });
    else return false;
    return true;
  };
  // One connection only: a reconnect finds the broker gone (the fake's connection stays dead).
  let dialed = 0;
  const connecting = FelixClient.create(
    {
      servers: ['quic://fake:1'],
      tenant: 't1',
      token: 'x',
      connectTimeoutMs: BOUND_MS,
      requestTimeoutMs: BOUND_MS,
    },
    {
      open: (server, o, turn) =>
        ++dialed === 1
          ? BrokerConnection.over(server, broker.conn, o, turn)
          : Promise.reject(new Error('the broker is gone')),
    },
  );
  return { broker, connecting };
}

/** Whether the broker received a message of `type`. */
const got = (broker: FakeBroker, type: string) =>
  broker.received.some(({ msg }) => msg.type === type);

/** How `p` failed (it must, within ENDS_WITHIN_MS). */
async function failureOf(p: Promise<unknown>): Promise<unknown> {
  const outcome = await withDeadline(
    p.then(
      () => ({ err: undefined }),
      (err: unknown) => ({ err }),
    ),
    ENDS_WITHIN_MS,
    'the call to fail',
  );
  if (outcome.err === undefined) throw new Error('the call succeeded');
  return outcome.err;
}

/** Expects `err` to be the unknown outcome of a write sent before the connection was lost. */
function expectOutcomeUnknown(err: unknown): void {
  expect(err).toBeInstanceOf(OutcomeUnknownError);
  expect((err as OutcomeUnknownError).retry).toBe('unknown_outcome');
  expect((err as Error).cause).toBeInstanceOf(ConnectionLostError);
}

describe('a request cut off by a lost connection', () => {
  it('a_counter_add_cut_off_by_a_lost_connection_fails_as_outcome_unknown', async () => {
    const { broker, connecting } = rig((msg) => msg.type === 'counter_add');
    const client = await connecting;
    try {
      const add = client.counter('hits').add('k', 1n);
      await waitFor(() => got(broker, 'counter_add'), 'the add reaches the broker', 5_000);
      broker.kill();
      const err = await failureOf(add);
      // An add is not idempotent: sent again after this it could count twice.
      expectOutcomeUnknown(err);
      // It names the write, and says what is not known (not "the publish ... acknowledged").
      expect((err as Error).message).toBe(
        'the connection was lost before the write to counter hits was answered: it may or may ' +
          'not have been applied',
      );
    } finally {
      await client.close();
    }
  });

  it('a_group_ack_cut_off_by_a_lost_connection_fails_as_outcome_unknown', async () => {
    const { broker, connecting } = rig(
      (msg) => msg.type === 'group_ack' || msg.type === 'group_ack_batch',
    );
    const client = await connecting;
    try {
      const ack = client.group('orders', 'billing').ack(5);
      await waitFor(
        () => got(broker, 'group_ack') || got(broker, 'group_ack_batch'),
        'the ack reaches the broker',
        5_000,
      );
      broker.kill();
      const err = await failureOf(ack);
      expectOutcomeUnknown(err);
      expect((err as Error).message).toContain('the write to group billing was answered');
    } finally {
      await client.close();
    }
  });

  it('every_request_cut_off_by_a_lost_connection_fails_reads_as_connection_lost_and_writes_as_outcome_unknown', async () => {
    const { broker, connecting } = rig((msg) => msg.type !== 'auth');
    const client = await connecting;
    try {
      const cache = client.cache('users');
      const group = client.group('orders', 'billing');
      const delivery = new GroupMessage(group, 9, new Uint8Array(0), 1);
      const reads = [
        cache.get('u1'),
        client.counter('hits').get('k'),
        group.describe(),
        group.deadLetters(),
        client.offsetForTime('orders', new Date(0)),
      ];
      const writes = [
        cache.put('u1', 'v'),
        cache.delete('u1'),
        client.counter('hits').add('k', 1n),
        group.ack(5),
        group.nack(6, 1),
        delivery.extend(1_000),
        delivery.deadLetter(),
        group.redrive(7),
        group.discard(8),
        group.seek('latest'),
        group.delete(),
      ];
      const sent = () => broker.received.filter(({ msg }) => msg.type !== 'auth').length;
      const all = reads.length + writes.length;
      await waitFor(() => sent() === all, 'every request reaches the broker', 5_000);
      broker.kill();
      for (const r of reads) expect(await failureOf(r)).toBeInstanceOf(ConnectionLostError);
      for (const w of writes) expectOutcomeUnknown(await failureOf(w));
    } finally {
      await client.close();
    }
  });

  it('a_counter_add_made_while_its_request_stream_opens_fails_as_connection_lost_when_the_connection_is_lost', async () => {
    // The connection's own `auth` is answered; the request stream's, opened for the add, is not.
    let auths = 0;
    const { broker, connecting } = rig((msg) => msg.type === 'auth' && ++auths === 2);
    const client = await connecting;
    try {
      const add = client.counter('hits').add('k', 1n);
      await waitFor(() => auths === 2, 'the request stream is opening', 5_000);
      broker.kill();
      const err = await failureOf(add);
      // Never sent, so never applied: the loss itself, which a retry once reconnected may follow.
      expect(err).toBeInstanceOf(ConnectionLostError);
      expect((err as ConnectionLostError).retry).toBe('reconnect');
      expect(got(broker, 'counter_add')).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('a_cache_put_still_held_for_its_turns_end_when_the_connection_is_lost_fails_as_connection_lost_and_is_never_written', async () => {
    const { broker, connecting } = rig(() => false);
    const client = await connecting;
    try {
      const cache = client.cache('users');
      expect(await cache.get('u1')).toBeUndefined(); // the request stream is open
      // On a live stream a put is queued in the caller's turn, for the turn's end; the loss
      // (kill's promise reactions, within this turn) is seen before that.
      const put = cache.put('u1', 'v');
      broker.kill();
      const err = await failureOf(put);
      expect(err).toBeInstanceOf(ConnectionLostError);
      expect(got(broker, 'cache_put')).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('a_routed_counter_add_cut_off_by_its_owners_loss_is_never_sent_again_while_a_routed_get_answers_from_the_new_owner', async () => {
    // The entry broker a names the owner of the counters' one shard: b, then c once b is gone.
    let owner = 'b';
    const opened: Record<string, FakeBroker[]> = {};
    const open = (server: string, o: ConnectionOptions, turn: TurnBatcher) => {
      const b = new FakeBroker({ reauth: false, cluster: true });
      b.answer = (at, msg) => {
        if (msg.type === 'shard_owners') {
          const addr = `${owner}:1`;
          const owners = [{ shard: 0, node_id: owner, addr, generation: owner === 'b' ? 1 : 2 }];
          at.send({ type: 'shard_owners_view', owners, request_id: msg.request_id });
          return true;
        }
        // b takes the counter calls and dies before it answers them; c answers a get.
        if (server === 'quic://b:1')
          return msg.type === 'counter_add' || msg.type === 'counter_get';
        if (msg.type !== 'counter_get') return false;
        at.send({ type: 'counter_value', value: 3n, request_id: msg.request_id });
        return true;
      };
      (opened[server] ??= []).push(b);
      return BrokerConnection.over(server, b.conn, o, turn);
    };
    const on = (addr: string) => opened[addr]?.at(-1);
    const client = await FelixClient.create(
      { servers: ['quic://a:1'], tenant: 't1', token: 't', requestTimeoutMs: BOUND_MS },
      { open },
    );
    try {
      const hits = client.counter('hits');
      const add = hits.add('k', 1n);
      const get = hits.get('k');
      await waitFor(
        () => got(on('quic://b:1')!, 'counter_add') && got(on('quic://b:1')!, 'counter_get'),
        'both calls reach the owner b',
        5_000,
      );
      owner = 'c';
      on('quic://b:1')!.kill();
      // The add may have counted on b: not sent again, to c or anywhere (it would count twice).
      expectOutcomeUnknown(await failureOf(add));
      // The get changed nothing: sent again, it answers from the new owner.
      expect(await withDeadline(get, ENDS_WITHIN_MS, 'the get')).toBe(3n);
      const adds = Object.values(opened)
        .flat()
        .flatMap((b) => b.received.filter(({ msg }) => msg.type === 'counter_add'));
      expect(adds).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('writes_sent_before_an_answer_the_client_cannot_read_fail_as_outcome_unknown', async () => {
    // The broker answers the first add with another request's id: the client cannot tell which
    // request it answers, so the stream is failed. Both adds were sent: either may have counted.
    let first: Message | undefined;
    const { broker, connecting } = rig((msg) => {
      if (msg.type !== 'counter_add') return false;
      first ??= msg;
      return true;
    });
    const client = await connecting;
    try {
      const counter = client.counter('hits');
      const adds = [counter.add('k', 1n), counter.add('k', 2n)];
      await waitFor(
        () => broker.received.filter(({ msg }) => msg.type === 'counter_add').length === 2,
        'both adds reach the broker',
        5_000,
      );
      const at = broker.received.find(({ msg }) => msg === first)!.stream;
      const id = (first as { request_id: number }).request_id;
      at.send({ type: 'counter_value', value: 1n, request_id: id + 1_000 });
      for (const add of adds) {
        const err = await failureOf(add);
        expect(err).toBeInstanceOf(OutcomeUnknownError);
        expect((err as Error).cause).toBeInstanceOf(ProtocolError);
        expect((err as Error).message).toContain('the request stream failed before the write to');
      }
    } finally {
      await client.close();
    }
  });
});
