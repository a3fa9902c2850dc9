// Goal: a client with a token provider re-authenticates its live connection in band (`reauth` on
// the request stream) when the broker offers it, without touching a subscription; against a
// broker that does not, the fresh token waits for the next connection; every stream opened later
// authenticates with the newest token; a refused reauth is reported and tried again; a forbidden
// publish or request fails alone; a subscription the broker ends as `unauthenticated` ends with
// UnauthenticatedError. Method: FelixClient over a scripted fake broker (test/fake-broker.ts) and
// a pinned clock whose refresh timer the test fires.
import { waitFor } from '@felix/testing-harness';
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import {
  ConnectError,
  DrainingError,
  ForbiddenError,
  UnauthenticatedError,
} from '../src/errors.js';
import { BrokerConnection, type ConnectionOptions } from '../src/protocol/broker-connection.js';
import type { TurnBatcher } from '../src/protocol/turn-batcher.js';
import type { StatusEvent } from '../src/status.js';
import { FakeBroker } from './fake-broker.js';
import { FakeClock, jwt } from './fake-clock.js';

const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function rig(opts: { reauth: boolean }) {
  const broker = new FakeBroker(opts);
  const clock = new FakeClock();
  const issued: string[] = [];
  const provider = async () => {
    const iat = Math.floor(clock.now() / 1000);
    const token = jwt({ sub: 'p1', tid: 't1', n: issued.length + 1, iat, exp: iat + 90 });
    issued.push(token);
    return token;
  };
  const client = await FelixClient.create(
    { servers: ['quic://fake:1'], tenant: 't1', token: provider },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn), clock },
  );
  const events: StatusEvent[] = [];
  void (async () => {
    for await (const e of client.status()) events.push(e);
  })();
  return { broker, clock, issued, client, events };
}

/** Fires the refresh timer (the clock's earliest) and waits for the refresh to be reported. */
async function refresh(r: Awaited<ReturnType<typeof rig>>): Promise<StatusEvent> {
  const before = r.events.length;
  r.clock.fire();
  return waitFor(
    () => r.events.slice(before).find((e) => e.type.startsWith('token_refresh')),
    'the refresh is reported',
  );
}

describe('in-band reauthentication', () => {
  it('a_fresh_token_reauthenticates_the_live_connection_in_band_and_the_subscription_goes_on', async () => {
    const r = await rig({ reauth: true });
    const { broker, client, issued } = r;
    const it = client.subscribe('orders', { shard: 0, from: 'earliest' })[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => broker.events.get(1), 'the subscription is open');
    broker.emit(1, 0, ['a']);
    expect(text((await first).value.data)).toBe('a');

    expect(await refresh(r)).toMatchObject({ type: 'token_refreshed', reauthenticated: true });
    expect(issued).toHaveLength(2);
    expect(broker.reauths.map((m) => m.token)).toEqual([issued[1]]);
    // The subscription was not touched: no second subscribe, its stream still delivers.
    broker.emit(1, 1, ['b']);
    expect(text((await it.next()).value.data)).toBe('b');
    expect(broker.received.filter(({ msg }) => msg.type === 'subscribe')).toHaveLength(1);
    expect(broker.events.get(1)!.isReset).toBe(false);
    // A stream opened now authenticates with the fresh token.
    const second = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]();
    void second.next();
    await waitFor(() => broker.events.get(2), 'the second subscription is open');
    expect(broker.authTokens.at(-1)).toBe(issued[1]);
    expect(broker.authTokens[0]).toBe(issued[0]);
    await client.close();
  });

  it('against_a_broker_without_reauth_a_fresh_token_waits_for_new_streams_and_the_next_connection', async () => {
    const r = await rig({ reauth: false });
    const { broker, client, issued } = r;
    expect(await refresh(r)).toMatchObject({ type: 'token_refreshed', reauthenticated: false });
    expect(broker.reauths).toEqual([]);
    expect(await client.counter('hits').add('k', 1n)).toBe(1n);
    expect(broker.authTokens).toEqual([issued[0], issued[1]]);
    expect(r.clock.timers).toHaveLength(1); // the next refresh
    await client.close();
    expect(r.clock.timers).toEqual([]); // stopped with the client
  });

  it('a_refused_reauth_is_reported_and_tried_again_with_a_fresh_token', async () => {
    const r = await rig({ reauth: true });
    const { broker, issued } = r;
    let refuse = true;
    broker.answer = (at, msg) => {
      if (msg.type !== 'reauth' || !refuse) return false;
      refuse = false;
      at.send({ type: 'error', code: 'unauthenticated', message: 'another principal' });
      return true;
    };
    const failed = await refresh(r);
    expect(failed).toMatchObject({ type: 'token_refresh_failed', attempt: 1 });
    expect((failed as { error: Error }).error).toBeInstanceOf(UnauthenticatedError);
    expect(await refresh(r)).toMatchObject({ type: 'token_refreshed', reauthenticated: true });
    expect(broker.reauths.map((m) => m.token)).toEqual([issued[1], issued[2]]);
    await r.client.close();
  });
});

describe('reconnecting with a token provider', () => {
  it('a_reconnect_refused_as_unauthenticated_asks_the_provider_for_a_fresh_token', async () => {
    const clock = new FakeClock();
    const issued: string[] = [];
    const provider = async () => {
      const iat = Math.floor(clock.now() / 1000);
      issued.push(jwt({ n: issued.length + 1, iat, exp: iat + 900 }));
      return issued.at(-1)!;
    };
    const brokers: FakeBroker[] = [];
    const open = (server: string, o: ConnectionOptions, turn: TurnBatcher) => {
      const b = new FakeBroker({ reauth: true });
      brokers.push(b);
      // The second broker refuses the token it is shown (revoked, say).
      if (brokers.length === 2)
        b.answer = (at, msg) => {
          if (msg.type !== 'auth') return false;
          at.send({ type: 'error', code: 'unauthenticated', message: 'revoked' });
          return true;
        };
      return BrokerConnection.over(server, b.conn, o, turn);
    };
    const client = await FelixClient.create(
      {
        servers: ['quic://fake:1'],
        tenant: 't1',
        token: provider,
        reconnect: { baseMs: 1, maxDelayMs: 2 },
      },
      { open, clock },
    );
    brokers[0]!.kill();
    await waitFor(() => brokers[2]?.authTokens.length, 'a third connection authenticated');
    // The token was not due (900 s): only the refusal made the client ask for another.
    expect(brokers[1]!.authTokens).toEqual([issued[0]]);
    expect(brokers[2]!.authTokens[0]).toBe(issued[1]);
    expect(issued).toHaveLength(2);
    await client.close();
  });
});

describe('connecting with a refused token', () => {
  it('a_connect_refused_for_its_token_fails_as_not_retryable', async () => {
    const open = (server: string, o: ConnectionOptions, turn: TurnBatcher) => {
      const b = new FakeBroker({ reauth: true });
      b.answer = (at, msg) => {
        if (msg.type !== 'auth') return false;
        at.send({ type: 'error', code: 'unauthenticated', message: 'no token given' });
        return true;
      };
      return BrokerConnection.over(server, b.conn, o, turn);
    };
    const err = await FelixClient.create(
      { servers: ['quic://fake:1'], tenant: 't1', token: '' },
      { open, clock: new FakeClock() },
    ).catch((e: unknown) => e);
    // The same token cannot succeed on a retry: the outer error says so, like its cause.
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).retry).toBe('never');
    expect((err as ConnectError).cause).toBeInstanceOf(UnauthenticatedError);
  });
});

describe('connecting to a draining broker', () => {
  it('a_broker_refusing_auth_while_draining_is_passed_over_for_the_next_server', async () => {
    // A broker draining on SIGTERM refuses a new stream's auth with `draining` (retry elsewhere).
    // Before, the client read every refused auth as UnauthenticatedError (retry: never), so a
    // reconnect that met one ended the subscription in a rolling restart.
    const open = (server: string, o: ConnectionOptions, turn: TurnBatcher) => {
      const b = new FakeBroker({ reauth: true });
      if (server === 'quic://draining:1') {
        b.answer = (at, msg) => {
          if (msg.type !== 'auth') return false;
          at.send({ type: 'error', code: 'draining', message: 'broker is shutting down' });
          return true;
        };
      }
      return BrokerConnection.over(server, b.conn, o, turn);
    };
    const only = await FelixClient.create(
      { servers: ['quic://draining:1'], tenant: 't1', token: 'x' },
      { open, clock: new FakeClock() },
    ).catch((e: unknown) => e);
    expect(only).toBeInstanceOf(ConnectError);
    expect((only as ConnectError).cause).toBeInstanceOf(DrainingError);
    expect((only as ConnectError).retry).not.toBe('never');
    const client = await FelixClient.create(
      { servers: ['quic://draining:1', 'quic://live:2'], tenant: 't1', token: 'x' },
      { open, clock: new FakeClock() },
    );
    await client.close();
  });
});

const forbidden = (action: string, object: string) => ({
  code: 'forbidden',
  message: `${action} is not allowed on ${object}`,
  detail: { action, object },
});

describe('authorization refusals on a live connection', () => {
  it('a_forbidden_publish_or_request_fails_alone_and_the_connection_stays_usable', async () => {
    const { broker, client, events } = await rig({ reauth: true });
    broker.answer = (at, msg: Message) => {
      if (msg.type === 'publish_batch' && msg.stream === 'secret') {
        const refusal = forbidden('stream.publish', 'stream:t1/default/secret');
        at.send({ type: 'publish_error', request_id: msg.request_id!, ...refusal });
        return true;
      }
      if (msg.type === 'counter_add' && msg.key === 'secret') {
        at.send({ type: 'error', ...forbidden('counter.write', 'cache:t1/default/hits') });
        return true;
      }
      return false;
    };
    const publish = client.publish('secret', 'x');
    const ok = client.publish('orders', 'y');
    await expect(publish).rejects.toBeInstanceOf(ForbiddenError);
    await expect(publish).rejects.toMatchObject({
      action: 'stream.publish',
      object: 'stream:t1/default/secret',
      retry: 'never',
    });
    expect(await ok).toEqual({ offset: 0, shard: 0 });
    const hits = client.counter('hits');
    await expect(hits.add('secret', 1n)).rejects.toMatchObject({
      code: 'FELIX_CLIENT_FORBIDDEN',
      action: 'counter.write',
    });
    expect(await hits.add('k', 2n)).toBe(2n);
    expect(await client.publish('orders', 'z')).toEqual({ offset: 0, shard: 0 });
    // One connection throughout: nothing was retried or reconnected.
    expect(events.filter((e) => e.type === 'disconnected')).toEqual([]);
    expect(broker.authTokens).toHaveLength(2); // the publish stream and the request stream
    await client.close();
  });

  it('a_subscription_the_broker_ends_as_unauthenticated_ends_with_unauthenticated_error', async () => {
    const { broker, client } = await rig({ reauth: true });
    const it = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]();
    const next = it.next();
    await waitFor(() => broker.events.get(1), 'the subscription is open');
    broker.events.get(1)!.send({ type: 'error', code: 'unauthenticated', message: 'expired' });
    await expect(next).rejects.toBeInstanceOf(UnauthenticatedError);
    // It ended for good: no resubscribe behind the caller.
    expect(broker.received.filter(({ msg }) => msg.type === 'subscribe')).toHaveLength(1);
    await client.close();
  });

  it('a_subscription_ended_by_an_unauthenticated_error_on_its_control_stream_is_not_resubscribed', async () => {
    const { broker, client } = await rig({ reauth: true });
    const it = client.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]();
    const next = it.next();
    const control = await waitFor(
      () => broker.received.find(({ msg }) => msg.type === 'subscribe')?.stream,
      'the subscription is open',
    );
    await waitFor(() => broker.events.get(1), 'its event stream is open');
    // As the broker does at expiry: the refusal on the control stream, then the events end.
    control.send({ type: 'error', code: 'unauthenticated', message: 'expired' });
    broker.events.get(1)!.inbound.end();
    await expect(next).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(broker.received.filter(({ msg }) => msg.type === 'subscribe')).toHaveLength(1);
    await client.close();
  });
});
