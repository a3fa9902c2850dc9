// Goal: a client given a token provider keeps a subscription across the end of its first token's
// acceptance: it renews the token and re-authenticates the live connection in band (`reauth`),
// so the broker never ends the subscription, nothing reconnects and nothing is lost; the same
// subscription under a fixed token ends with UnauthenticatedError at that point (so the first
// test can fail); a call refused `forbidden` fails alone, naming its action and object, and the
// client goes on. Method: a real broker on real tenant keys (`auth` in the broker spec), tokens
// minted in the test; each token's acceptance ends a few seconds after it is minted (its `exp`
// lies in the past, inside the broker's clock skew), so its refresh point has passed and the
// client renews at TOKEN_REFRESH_DELAY_MS_MIN; the test waits, by condition, past the end.
import { ForbiddenError, type StatusEvent, UnauthenticatedError } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, TestTenants, brokerMetric, startBroker } from '../src/index.js';
import { PROJECTIONS_YAML, TRANSPORTS, WATCHES, client, openWatch, text } from './support.js';

const YAML = 'streams:\n  - { tenant: t1, name: orders }\n  - { tenant: t1, name: audit }\n';
/** Connections whose token ran out while open (their subscriptions were ended). */
const EXPIRED = /felix_broker_connection_tokens_expired_total (\d+)/;
/** The broker accepts a token until its `exp` plus this (@felix/authz TOKEN_CLOCK_SKEW_S). */
const BROKER_SKEW_S = 30;

/** A token the broker accepts for about `acceptedS` more seconds (its `exp` already passed). */
function acceptedFor(tenants: TestTenants, acceptedS: number): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000) - 60;
  return tenants.mint('t1', { nowS, lifetimeS: 60 - BROKER_SKEW_S + acceptedS });
}

function record(felix: { status(): AsyncIterable<StatusEvent> }): StatusEvent[] {
  const seen: StatusEvent[] = [];
  void (async () => {
    for await (const e of felix.status()) seen.push(e);
  })();
  return seen;
}

for (const transport of TRANSPORTS) {
  describe(`client tokens over ${transport}`, () => {
    let broker: BrokerProcess;
    let tenants: TestTenants;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      tenants = await TestTenants.create(['t1']);
      broker = await startBroker({ yaml: YAML, dir: dir.path, auth: tenants });
    });
    afterAll(async () => {
      await broker?.stop();
      await cleanup?.();
    });

    it('a_client_reauthenticates_in_band_before_expiry_without_losing_subscriptions', async () => {
      const acceptedS = 4;
      const expiredBefore = await brokerMetric(broker, EXPIRED);
      const felix = await client(broker, transport, {
        token: () => acceptedFor(tenants, acceptedS),
      });
      // The first token was minted during connect: the broker stops accepting it by then.
      const firstEndsAt = Date.now() + acceptedS * 1000;
      const seen = record(felix);
      const it = felix.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator]();
      await felix.publish('orders', 'before');
      expect(text((await it.next()).value.data)).toBe('before');

      const reauthed = () =>
        seen.filter((e) => e.type === 'token_refreshed' && e.reauthenticated).length;
      await waitFor(
        () => Date.now() > firstEndsAt + 1_500 && reauthed() >= 2,
        'past the first token with in-band renewals',
        30_000,
      );
      await felix.publish('orders', 'after');
      expect(text((await it.next()).value.data)).toBe('after');
      // One connection, one subscription throughout: no loss, no reconnect, no failed renewal.
      expect(seen.filter((e) => e.type === 'disconnected' || e.type === 'gap')).toEqual([]);
      expect(seen.filter((e) => e.type === 'token_refresh_failed')).toEqual([]);
      // The broker never saw the connection's token run out (it would have ended the subscription).
      expect(await brokerMetric(broker, EXPIRED)).toBe(expiredBefore);
      await felix.close();
    });

    it('a_forbidden_client_call_fails_at_once_naming_its_action_and_object_and_the_client_goes_on', async () => {
      const token = await tenants.mint('t1', {
        permissions: [
          'stream.publish:stream:t1/default/audit',
          'stream.subscribe:stream:t1/default/audit',
        ],
      });
      const felix = await client(broker, transport, { token });
      const seen = record(felix);
      const audit = felix.subscribe('audit', { from: 'earliest' })[Symbol.asyncIterator]();
      await felix.publish('audit', 'first');
      expect(text((await audit.next()).value.data)).toBe('first');

      // A publish (binary, acked) and a subscribe without their permissions: each fails alone.
      const publish = felix.publish('orders', 'x');
      await expect(publish).rejects.toBeInstanceOf(ForbiddenError);
      await expect(publish).rejects.toMatchObject({
        action: 'stream.publish',
        object: 'stream:t1/default/orders',
        retry: 'never',
      });
      const denied = felix.subscribe('orders', { shard: 0 })[Symbol.asyncIterator]().next();
      await expect(denied).rejects.toMatchObject({
        code: 'FELIX_CLIENT_FORBIDDEN',
        action: 'stream.subscribe',
        object: 'stream:t1/default/orders',
      });
      // A merged subscribe asks for the shard count first: refused as well, the connection kept.
      const merged = felix.subscribe('orders')[Symbol.asyncIterator]().next();
      await expect(merged).rejects.toBeInstanceOf(ForbiddenError);

      // The connection and the subscription that was allowed go on.
      await felix.publish('audit', 'second');
      expect(text((await audit.next()).value.data)).toBe('second');
      expect(seen.filter((e) => e.type === 'disconnected')).toEqual([]);
      await felix.close();
    });

    it('a_subscription_under_a_fixed_token_ends_unauthenticated_once_the_broker_stops_accepting_it', async () => {
      const expiredBefore = await brokerMetric(broker, EXPIRED);
      const felix = await client(broker, transport, { token: await acceptedFor(tenants, 3) });
      const it = felix.subscribe('orders')[Symbol.asyncIterator]();
      await expect(it.next()).rejects.toBeInstanceOf(UnauthenticatedError);
      // What the test above checks stays at zero is counted here.
      expect(await brokerMetric(broker, EXPIRED)).toBeGreaterThan(expiredBefore);
      await felix.close();
    });
  });
}

// A watch is a stream's long-lived reader as a subscription is: the broker ends it when the
// connection's token expires. It used to go on delivering every change to a connection whose
// token had run out (the broker stopped a watch only when its control stream closed).
for (const transport of TRANSPORTS) {
  describe(`a cache watch under an expiring token over ${transport}`, () => {
    let broker: BrokerProcess;
    let tenants: TestTenants;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      tenants = await TestTenants.create(['t1']);
      broker = await startBroker({
        yaml: PROJECTIONS_YAML,
        dir: dir.path,
        durable: true,
        auth: tenants,
      });
    });
    afterAll(async () => {
      await broker?.stop();
      await cleanup?.();
    });

    it('a_cache_watch_under_a_fixed_token_ends_unauthenticated_and_sees_no_change_after_expiry', async () => {
      const expiredBefore = await brokerMetric(broker, EXPIRED);
      const felix = await client(broker, transport, { token: await acceptedFor(tenants, 3) });
      const writer = await client(broker, transport, { token: await tenants.mint('t1') });
      const it = felix.cache('users').watch({ prefix: 'u' })[Symbol.asyncIterator]();
      let first: Promise<IteratorResult<unknown>> | undefined;
      await openWatch(broker, () => {
        first = it.next();
      });
      await writer.cache('users').put('u1', 'before');
      expect((await first!).value).toMatchObject({ type: 'put', key: 'u1' });
      await waitFor(
        async () => (await brokerMetric(broker, EXPIRED)) > expiredBefore,
        'the token to expire',
        15_000,
      );
      // A change made after the expiry, by a client allowed to make it, must not reach it.
      await writer.cache('users').put('u1', 'after');
      const end = await Promise.race([
        it.next().then(
          (r) => r,
          (e: unknown) => e,
        ),
        new Promise((resolve) => setTimeout(() => resolve('no end within 10 s'), 10_000)),
      ]);
      expect(end).toBeInstanceOf(UnauthenticatedError);
      await waitFor(async () => (await brokerMetric(broker, WATCHES)) === 0, 'the watch released');
      await writer.close();
      await felix.close();
    });
  });
}
