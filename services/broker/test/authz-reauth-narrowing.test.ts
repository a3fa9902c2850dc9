// Goal: a new token of the connection (a `reauth`) ends every subscription it no longer allows
// (docs/security.md, "Tokens end": "A new token takes effect for what is already open too: a
// subscription or watch it no longer allows ends `forbidden`"), whatever else the stream did
// before the reauth and whenever the subscription's open completed.
// Method: a real broker (TLS) on `auth.keys_file`; raw request streams; the broker-opened uni
// streams of the connection are read to see whether events still arrive after the reauth.
import {
  type BrokerProcess,
  type RawSession,
  TestTenants,
  rawAuthed,
  startBroker,
} from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import { FEATURE_HI_REAUTH, FrameDecoder, type Message, encodeMessage } from '@felix/wire';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

const FEATURES = 0x0fff_ffff;
const NS = { tenant_id: 't1', namespace: 'default' };

const YAML = `
streams:
  - { tenant: t1, name: orders }
  - { tenant: t1, name: audit, durable: true }
caches:
  - { tenant: t1, name: users }
`;

/** Frames each broker-opened uni stream (a subscription's or a watch's) has carried. */
function collectEventStreams(conn: Connection): { frames: number[] } {
  const out = { frames: [] as number[] };
  void (async () => {
    try {
      for await (const uni of conn.incoming()) {
        const i = out.frames.push(0) - 1;
        const decoder = new FrameDecoder();
        void (async () => {
          try {
            for await (const chunk of uni) out.frames[i]! += decoder.push(chunk).length;
          } catch {
            // reset by the broker: what it carried is counted
          }
        })();
      }
    } catch {
      // the connection closed
    }
  })();
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The value of an unlabelled (or first matching) series of the broker's /metrics. */
async function metric(b: BrokerProcess, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${b.httpPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function within<T>(p: Promise<T>, ms: number): Promise<T | 'nothing'> {
  return Promise.race([p, sleep(ms).then(() => 'nothing' as const)]);
}

async function request(s: RawSession, msg: Message): Promise<Record<string, unknown>> {
  await s.stream.write(encodeMessage(msg));
  return (await s.next()) as Record<string, unknown>;
}

const publish = (rid: number): Message => ({
  type: 'publish',
  ...NS,
  stream: 'orders',
  payload: new Uint8Array([1, 2, 3]),
  request_id: rid,
  ack: 'per_message',
});

describe('reauth narrowing of open subscriptions', () => {
  let broker: BrokerProcess | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  let tenants: TestTenants;
  const conns: Connection[] = [];

  const start = async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    tenants = await TestTenants.create(['t1']);
    broker = await startBroker({ yaml: YAML, dir: dir.path, durable: true, auth: tenants });
  };
  const open = async () => {
    const c = await dial(broker!.url('tls'), { fingerprint: broker!.fingerprint });
    conns.push(c);
    return c;
  };
  const authed = (conn: Connection, token: string) =>
    rawAuthed(conn, FEATURES, FEATURE_HI_REAUTH, 0x1fff, { tenant: 't1', token });

  afterEach(async () => {
    await Promise.allSettled(conns.splice(0).map((c) => c.close()));
    await broker?.stop();
    await cleanup?.();
    broker = undefined;
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('a_narrower_reauth_ends_a_subscription_opened_before_thousands_of_watches_on_its_stream', async () => {
    await start();
    const conn = await open();
    const events = collectEventStreams(conn);
    const wide = await tenants.mint('t1', {
      permissions: [
        'stream.subscribe:stream:t1/default/orders',
        'stream.publish:stream:t1/default/orders',
        'cache.read:cache:t1/default/*',
      ],
    });
    const s = await authed(conn, wide);
    expect(await request(s, { type: 'subscribe', ...NS, stream: 'orders' })).toMatchObject({
      type: 'subscribed',
    });
    // 2,048 watches on caches that do not exist: each is answered `not_found` (not fatal), yet
    // each scope is remembered as "opened" and the oldest remembered scope (the subscription's)
    // is dropped from the list a new token is checked against.
    const pads = 2_048;
    const batch: Uint8Array[] = [];
    for (let i = 0; i < pads; i++) {
      batch.push(
        encodeMessage({ type: 'cache_watch', ...NS, cache: `pad-${i}`, key: 'k', retained: false }),
      );
    }
    await s.stream.write(Buffer.concat(batch));
    for (let i = 0; i < pads; i++) {
      expect(await s.next()).toMatchObject({ type: 'error', code: 'not_found' });
    }
    // The same principal, no longer allowed to subscribe to orders (still reads caches).
    const narrow = await tenants.mint('t1', {
      permissions: ['stream.publish:stream:t1/default/orders', 'cache.read:cache:t1/default/*'],
    });
    const other = await authed(conn, wide);
    expect(await request(other, { type: 'reauth', token: narrow, request_id: 1 })).toMatchObject({
      type: 'reauth_ok',
    });
    const ended = await within(s.next(), 2_000);
    // Once no subscription is left at the broker, nothing published after can reach the stream.
    await waitFor(
      async () => (await metric(broker!, 'felix_broker_subscriptions ')) === 0,
      'the subscription released',
      5_000,
    );
    const before = sum(events.frames);
    expect(await request(other, publish(2))).toMatchObject({ type: 'publish_ok' });
    const deliveredAfterReauth = sum(events.frames) - before;
    // Expected: the subscription's stream ends `forbidden` and no record reaches it any more.
    expect({ ended, deliveredAfterReauth }).toMatchObject({
      ended: { type: 'error', code: 'forbidden', detail: { action: 'stream.subscribe' } },
      deliveredAfterReauth: 0,
    });
  });

  it('a_subscription_a_narrower_token_still_allows_goes_on_beside_a_watch_refused_before', async () => {
    await start();
    const conn = await open();
    const wide = await tenants.mint('t1', {
      permissions: ['stream.subscribe:stream:t1/default/orders', 'cache.read:cache:t1/default/*'],
    });
    const s = await authed(conn, wide);
    // Refused (no such cache): it opened nothing, so no later token is checked against it
    // (docs/security.md: "a stream is checked only for what it opened").
    const refused = await request(s, {
      type: 'cache_watch',
      ...NS,
      cache: 'nope',
      key: 'k',
      retained: false,
    });
    expect(refused).toMatchObject({ type: 'error', code: 'not_found' });
    expect(await request(s, { type: 'subscribe', ...NS, stream: 'orders' })).toMatchObject({
      type: 'subscribed',
    });
    const narrow = await tenants.mint('t1', {
      permissions: [
        'stream.subscribe:stream:t1/default/orders',
        'cache.read:cache:t1/default/users',
      ],
    });
    const other = await authed(conn, wide);
    expect(await request(other, { type: 'reauth', token: narrow, request_id: 1 })).toMatchObject({
      type: 'reauth_ok',
    });
    // The subscribing stream is still served: it answers a request after the reauth.
    const shards = { type: 'stream_shards' as const, ...NS, stream: 'orders', request_id: 2 };
    expect(await request(s, shards)).toMatchObject({ type: 'stream_shards_view' });
  });

  it('a_subscribe_admitted_before_a_narrower_reauth_is_not_served_under_the_new_token', async () => {
    await start();
    const conn = await open();
    const events = collectEventStreams(conn);
    const wide = await tenants.mint('t1', {
      permissions: [
        'stream.subscribe:stream:t1/default/orders',
        'stream.subscribe:stream:t1/default/audit',
        'stream.publish:stream:t1/default/orders',
      ],
    });
    const s = await authed(conn, wide);
    // A long poll ahead of the subscribe on the same stream: the subscribe is admitted (under
    // the wide token) at once, and its handler waits for the poll's answer before it opens.
    await s.stream.write(
      Buffer.concat([
        encodeMessage({
          type: 'group_poll',
          ...NS,
          stream: 'audit',
          shard: 0,
          group: 'g',
          max_records: 1,
          wait_ms: 2_000,
          request_id: 1,
          reclaim: false,
        }),
        encodeMessage({ type: 'subscribe', ...NS, stream: 'orders' }),
      ]),
    );
    // The poll is handled (so the subscribe after it in the same chunk is admitted, and waits).
    await waitFor(
      async () =>
        (await metric(broker!, 'felix_broker_projection_requests_total{type="group_poll"}')) >= 1,
      'the poll handled',
      5_000,
    );
    // Meanwhile the connection's token narrows: orders may no longer be read.
    const narrow = await tenants.mint('t1', {
      permissions: [
        'stream.subscribe:stream:t1/default/audit',
        'stream.publish:stream:t1/default/orders',
      ],
    });
    const other = await authed(conn, wide);
    expect(await request(other, { type: 'reauth', token: narrow, request_id: 2 })).toMatchObject({
      type: 'reauth_ok',
    });
    expect(await s.next()).toMatchObject({ type: 'group_records', request_id: 1 });
    const opened = await within(s.next(), 3_000);
    await waitFor(
      async () => (await metric(broker!, 'felix_broker_subscriptions ')) === 0,
      'no subscription left',
      5_000,
    );
    const before = sum(events.frames);
    expect(await request(other, publish(3))).toMatchObject({ type: 'publish_ok' });
    const deliveredAfterReauth = sum(events.frames) - before;
    // Expected: refused (or ended) `forbidden` under the token in force when it opens, and no
    // record of orders reaches this connection.
    expect({ opened, deliveredAfterReauth }).toMatchObject({
      opened: { type: 'error', code: 'forbidden' },
      deliveredAfterReauth: 0,
    });
  });
});
