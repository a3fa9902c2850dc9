// Goal: the broker verifies tokens at `auth` (the tenant's key, expiry, `tid`) and checks every
// request against the token's permissions (issue 21): a refusal is `forbidden` naming the action
// and object and leaves the connection usable; a token that expires on a live connection turns
// its next request `unauthenticated` and ends its subscriptions; `reauth` replaces the token.
// Method: a real broker per transport (TLS and QUIC) with an `auth.keys_file` of two tenants'
// keys; tokens minted with @felix/authz; raw request streams write each request and read the
// exact answer frames (codes, details, request ids). Expiry without a long wait: a token minted
// with its issue time in the past, so it leaves the package's 30 s skew within about 2 s.
import { TOKEN_CLOCK_SKEW_S } from '@felix/authz';
import {
  type BrokerProcess,
  type RawSession,
  TestTenants,
  brokerMetric,
  rawAuthed,
  startBroker,
} from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import {
  FEATURE_HI_REAUTH,
  FrameDecoder,
  type Message,
  decodeMessage,
  encodeMessage,
  encodePublishBatch,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: orders }
  - { tenant: t1, name: audit }
caches:
  - { tenant: t1, name: users }
`;
const FEATURES = 0x0fff_ffff;
const NS = { tenant_id: 't1', namespace: 'default' };
const nowS = () => Math.floor(Date.now() / 1000);

/** A token that is valid now and expires (exp + skew) in about `seconds`. */
function expiringSoon(seconds: number): { nowS: number; lifetimeS: number } {
  const lifetimeS = 60;
  return { nowS: nowS() + seconds - TOKEN_CLOCK_SKEW_S - lifetimeS, lifetimeS };
}

/** Opens a stream, sends `auth`, and answers the broker's first frame (auth_ok or error). */
async function authAnswer(conn: Connection, tenant: string, token: string): Promise<unknown> {
  const stream = await conn.openBidi();
  const decoder = new FrameDecoder();
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: tenant,
      token,
      client_flags: 0x1fff,
      client_features: FEATURES,
    }),
  );
  for await (const chunk of stream) {
    const frames = decoder.push(chunk);
    if (frames.length > 0) return decodeMessage(frames[0]!.payload);
  }
  return null;
}

const authed = (conn: Connection, token: string): Promise<RawSession> =>
  rawAuthed(conn, FEATURES, FEATURE_HI_REAUTH, 0x1fff, { tenant: 't1', token });

async function request(s: RawSession, msg: Message): Promise<Record<string, unknown>> {
  await s.stream.write(encodeMessage(msg));
  return (await s.next()) as Record<string, unknown>;
}

const publish = (stream: string, rid: number): Message => ({
  type: 'publish',
  ...NS,
  stream,
  payload: new Uint8Array([1, 2, 3]),
  request_id: rid,
  ack: 'per_message',
});

for (const transport of ['tls', 'quic'] as const) {
  describe(`broker authorization over ${transport}`, () => {
    let broker: BrokerProcess;
    let tenants: TestTenants;
    let cleanup: () => Promise<void>;
    const conns: Connection[] = [];
    const open = async () => {
      const c = await dial(broker.url(transport), { fingerprint: broker.fingerprint });
      conns.push(c);
      return c;
    };

    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      tenants = await TestTenants.create(['t1', 't2']);
      broker = await startBroker({ yaml: YAML, dir: dir.path, auth: tenants });
    });
    afterAll(async () => {
      await Promise.allSettled(conns.map((c) => c.close()));
      await broker?.stop();
      await cleanup?.();
    });

    it('a_token_signed_by_another_tenants_key_is_refused', async () => {
      const conn = await open();
      // Claims of t1, signed with t2's key: t1's keys do not hold that kid.
      const forged = await tenants.mint('t1', {}, 't2');
      const answer = (await authAnswer(conn, 't1', forged)) as Record<string, unknown>;
      expect(answer.type).toBe('error');
      expect(answer.code).toBe('unauthenticated');
      // A t2 token presented for t1 is refused too (`tid` must equal the connection's tenant).
      const other = await tenants.mint('t2');
      const second = (await authAnswer(conn, 't1', other)) as Record<string, unknown>;
      expect(second.code).toBe('unauthenticated');
      // The genuine token still authenticates.
      const good = (await authAnswer(conn, 't1', await tenants.mint('t1'))) as { type: string };
      expect(good.type).toBe('auth_ok');
    });

    it('an_expired_token_is_refused_at_auth', async () => {
      const conn = await open();
      const expired = await tenants.mint('t1', { nowS: nowS() - 3600, lifetimeS: 600 });
      const answer = (await authAnswer(conn, 't1', expired)) as Record<string, unknown>;
      expect(answer.type).toBe('error');
      expect(answer.code).toBe('unauthenticated');
      expect(String(answer.message)).toMatch(/expired/);
      const empty = (await authAnswer(conn, 't1', '')) as Record<string, unknown>;
      expect(empty.code).toBe('unauthenticated');
    });

    it('a_connection_without_a_token_is_told_that_a_token_is_missing', async () => {
      const conn = await open();
      const answer = (await authAnswer(conn, 't1', '')) as Record<string, unknown>;
      expect(answer.code).toBe('unauthenticated');
      expect(String(answer.message)).toMatch(/no token given/);
      expect(String(answer.message)).not.toMatch(/malformed/);
    });

    it('a_token_carrying_a_non_client_action_is_refused_as_a_whole', async () => {
      const conn = await open();
      const admin = await tenants.mint('t1', {
        permissions: ['stream.publish:stream:t1/*/*', 'tenant.manage:tenant:t1'],
      });
      const answer = (await authAnswer(conn, 't1', admin)) as Record<string, unknown>;
      expect(answer.code).toBe('unauthenticated');
      expect(String(answer.message)).toMatch(/tenant\.manage/);
    });

    it('a_publish_without_stream_publish_is_forbidden_and_the_connection_stays_usable', async () => {
      const conn = await open();
      const token = await tenants.mint('t1', {
        permissions: ['stream.publish:stream:t1/default/audit', 'cache.read:cache:t1/*/*'],
      });
      const s = await authed(conn, token);
      const before = await brokerMetric(
        broker,
        /felix_broker_requests_forbidden_total\{action="stream.publish"\} (\d+)/,
      );
      const refused = await request(s, publish('orders', 1));
      expect(refused).toMatchObject({ type: 'publish_error', request_id: 1, code: 'forbidden' });
      expect(refused.detail).toEqual({
        action: 'stream.publish',
        object: 'stream:t1/default/orders',
      });
      expect(String(refused.message)).toMatch(/stream\.publish.*stream:t1\/default\/orders/);
      // The same stream goes on: an allowed publish, then a binary publish refused by its ack.
      expect(await request(s, publish('audit', 2))).toMatchObject({ type: 'publish_ok' });
      await s.stream.write(
        encodePublishBatch({
          ...{ tenantId: 't1', namespace: 'default', stream: 'orders' },
          payloads: [new Uint8Array([9])],
          requestId: 3,
          ackMode: 'per_batch',
        }),
      );
      expect(await s.next()).toMatchObject({
        type: 'binary_publish_ack',
        status: 'error',
        requestId: 3,
        code: 2, // forbidden
        message: 'stream.publish on stream:t1/default/orders is not granted',
      });
      // Another stream of the connection was never disturbed.
      const other = await authed(conn, token);
      expect(await request(other, publish('audit', 4))).toMatchObject({ type: 'publish_ok' });
      const after = await brokerMetric(
        broker,
        /felix_broker_requests_forbidden_total\{action="stream.publish"\} (\d+)/,
      );
      expect(after - before).toBe(2);
    });

    it('a_subscribe_without_stream_subscribe_is_forbidden', async () => {
      const conn = await open();
      const token = await tenants.mint('t1', {
        permissions: ['stream.publish:stream:t1/*/*', 'stream.subscribe:stream:t1/default/audit'],
      });
      const s = await authed(conn, token);
      const refused = await request(s, { type: 'subscribe', ...NS, stream: 'orders' });
      expect(refused).toMatchObject({ type: 'error', code: 'forbidden' });
      expect(refused.detail).toEqual({
        action: 'stream.subscribe',
        object: 'stream:t1/default/orders',
      });
      // The stream stays usable: a subscribe it may make is answered.
      const ok = await request(s, { type: 'subscribe', ...NS, stream: 'audit' });
      expect(ok.type).toBe('subscribed');
    });

    it('cache_read_does_not_allow_cache_write', async () => {
      const conn = await open();
      const writer = await authed(conn, await tenants.mint('t1'));
      const put = {
        type: 'cache_put' as const,
        ...NS,
        cache: 'users',
        key: 'k',
        value: new Uint8Array([7]),
        request_id: 1,
      };
      expect(await request(writer, put)).toMatchObject({ type: 'cache_ok' });
      const reader = await authed(
        await open(),
        await tenants.mint('t1', { permissions: ['cache.read:cache:t1/default/users'] }),
      );
      const get = { type: 'cache_get' as const, ...NS, cache: 'users', key: 'k', request_id: 2 };
      expect(await request(reader, get)).toMatchObject({ type: 'cache_value', request_id: 2 });
      const denied = await request(reader, { ...put, request_id: 3 });
      expect(denied).toMatchObject({ type: 'error', code: 'forbidden' });
      expect(denied.detail).toEqual({ action: 'cache.write', object: 'cache:t1/default/users' });
      const del = { type: 'cache_delete' as const, ...NS, cache: 'users', key: 'k' };
      expect(await request(reader, { ...del, request_id: 4 })).toMatchObject({
        code: 'forbidden',
      });
      // Counters follow their cache: counter_get reads, counter_add writes.
      const add = { type: 'counter_add' as const, ...NS, cache: 'users', key: 'n', delta: 1n };
      expect(await request(reader, { ...add, request_id: 5 })).toMatchObject({
        detail: { action: 'cache.write' },
      });
      // The value survived every refused write, and the get still answers on the same stream.
      expect(await request(reader, { ...get, request_id: 6 })).toMatchObject({
        type: 'cache_value',
      });
    });

    // docs/protocol.md: `cache_shards` needs `cache.read` or `cache.write` on the cache.
    it('a_cache_writer_without_cache_read_is_told_the_caches_width', async () => {
      const writer = await authed(
        await open(),
        await tenants.mint('t1', { permissions: ['cache.write:cache:t1/default/users'] }),
      );
      const shards = { type: 'cache_shards' as const, ...NS, cache: 'users', request_id: 1 };
      // Refused `forbidden` naming cache.read: the cache check never tries the row's orAction.
      expect(await request(writer, shards)).toMatchObject({
        type: 'cache_shards_view',
        shards: 1,
        request_id: 1,
      });
    });

    it('a_connection_whose_token_expires_gets_unauthenticated_on_its_next_request', async () => {
      const conn = await open();
      const short = await tenants.mint('t1', expiringSoon(2));
      const s = await authed(conn, short);
      const watcher = await authed(conn, short);
      expect(await request(s, publish('orders', 1))).toMatchObject({ type: 'publish_ok' });
      expect(await request(watcher, { type: 'subscribe', ...NS, stream: 'orders' })).toMatchObject({
        type: 'subscribed',
      });
      const expiredAt = (nowS() + 3) * 1000;
      await waitFor(() => Date.now() > expiredAt, 'the token to expire', 10_000);
      // The stream that held a subscription was ended with the reason.
      expect(await watcher.next()).toMatchObject({ type: 'error', code: 'unauthenticated' });
      expect(await watcher.next()).toBeNull();
      // The request stream gets `unauthenticated` for its next request, and stays open.
      const late = await request(s, publish('orders', 2));
      expect(late).toMatchObject({ type: 'publish_error', request_id: 2, code: 'unauthenticated' });
      const get = { type: 'cache_get' as const, ...NS, cache: 'users', key: 'k', request_id: 3 };
      expect(await request(s, get)).toMatchObject({ type: 'error', code: 'unauthenticated' });
      // A reauth with a fresh token restores the connection.
      const fresh = await tenants.mint('t1');
      const ok = await request(s, { type: 'reauth', token: fresh, request_id: 4 });
      expect(ok).toMatchObject({ type: 'reauth_ok', request_id: 4 });
      expect(await request(s, publish('orders', 5))).toMatchObject({ type: 'publish_ok' });
    });

    it('a_reauth_without_stream_subscribe_ends_the_subscriptions_it_no_longer_allows', async () => {
      const conn = await open();
      const wide = await tenants.mint('t1', {
        permissions: [
          'stream.subscribe:stream:t1/default/orders',
          'stream.publish:stream:t1/default/orders',
          'cache.read:cache:t1/default/users',
        ],
      });
      const s = await authed(conn, wide);
      const subscriber = await authed(conn, wide);
      const watcher = await authed(conn, wide);
      expect(
        await request(subscriber, { type: 'subscribe', ...NS, stream: 'orders' }),
      ).toMatchObject({ type: 'subscribed' });
      const watch = {
        type: 'cache_watch' as const,
        ...NS,
        cache: 'users',
        prefix: '',
        retained: false,
      };
      expect(await request(watcher, watch)).toMatchObject({ type: 'cache_watch_started' });
      // The same principal, no longer allowed to subscribe: a narrower role since.
      const narrow = await tenants.mint('t1', {
        permissions: [
          'stream.publish:stream:t1/default/orders',
          'cache.read:cache:t1/default/users',
        ],
      });
      const ok = await request(s, { type: 'reauth', token: narrow, request_id: 1 });
      expect(ok).toMatchObject({ type: 'reauth_ok', request_id: 1 });
      // The subscription's stream ends with the reason; the watch it still allows goes on.
      expect(await subscriber.next()).toMatchObject({
        type: 'error',
        code: 'forbidden',
        detail: { action: 'stream.subscribe' },
      });
      expect(await subscriber.next()).toBeNull();
      const get = { type: 'cache_get' as const, ...NS, cache: 'users', key: 'k', request_id: 2 };
      expect(await request(watcher, get)).toMatchObject({ type: 'cache_value', request_id: 2 });
      expect(await request(s, publish('orders', 3))).toMatchObject({ type: 'publish_ok' });
    });

    it('a_subscription_a_narrower_token_still_allows_goes_on_beside_one_refused_before', async () => {
      const conn = await open();
      const wide = await tenants.mint('t1', {
        permissions: ['stream.subscribe:stream:t1/default/*'],
      });
      const s = await authed(conn, wide);
      // Refused (no such stream): it opened nothing, so no later token is checked against it.
      const refused = await request(s, { type: 'subscribe', ...NS, stream: 'nope' });
      expect(refused).toMatchObject({ type: 'error', code: 'not_found' });
      expect(await request(s, { type: 'subscribe', ...NS, stream: 'orders' })).toMatchObject({
        type: 'subscribed',
      });
      const narrow = await tenants.mint('t1', {
        permissions: ['stream.subscribe:stream:t1/default/orders'],
      });
      const other = await authed(conn, wide);
      expect(await request(other, { type: 'reauth', token: narrow, request_id: 1 })).toMatchObject({
        type: 'reauth_ok',
      });
      // The subscribing stream is still served: it answers a request after the reauth.
      const shards = { type: 'stream_shards' as const, ...NS, stream: 'orders', request_id: 2 };
      expect(await request(s, shards)).toMatchObject({ type: 'stream_shards_view' });
    });

    it('a_reauth_replaces_the_token_of_every_stream_and_answers_its_expiry', async () => {
      const conn = await open();
      const narrow = await tenants.mint('t1', {
        permissions: ['stream.publish:stream:t1/default/audit'],
      });
      const a = await authed(conn, narrow);
      const b = await authed(conn, narrow);
      expect(await request(b, publish('orders', 1))).toMatchObject({ code: 'forbidden' });
      const wide = await tenants.mint('t1', { lifetimeS: 1200 });
      const ok = await request(a, { type: 'reauth', token: wide, request_id: 7 });
      expect(ok).toMatchObject({ type: 'reauth_ok', request_id: 7 });
      const exp = ok.expires_at_ms as number;
      expect(Math.abs(exp - (Date.now() + 1_200_000))).toBeLessThan(10_000);
      // The other stream now runs under the new token.
      expect(await request(b, publish('orders', 2))).toMatchObject({ type: 'publish_ok' });
      // Another principal, or a bad token, is refused and the current token stays.
      const stranger = await tenants.mint('t1', { subject: 'someone-else' });
      const refused = await request(a, { type: 'reauth', token: stranger, request_id: 8 });
      expect(refused).toMatchObject({ type: 'error', code: 'unauthenticated' });
      const forged = await tenants.mint('t1', {}, 't2');
      expect(await request(a, { type: 'reauth', token: forged, request_id: 9 })).toMatchObject({
        code: 'unauthenticated',
      });
      expect(await request(a, publish('orders', 10))).toMatchObject({ type: 'publish_ok' });
      // A later stream of the connection must carry the same principal.
      const answer = (await authAnswer(conn, 't1', stranger)) as Record<string, unknown>;
      expect(answer.code).toBe('unauthenticated');
    });
  });
}
