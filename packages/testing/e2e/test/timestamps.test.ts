// Goal: record append times as the client sees them end to end: `offsetForTime` answers the first
// offset appended at or after a time (durable and in-memory streams), a subscription can start
// from a time, and subscribers and consumer groups that ask get each record's append time (kept
// across a restart). Method: a real felix-broker process and real clients over TLS. Batches are
// published on either side of a moment the test waits past (the broker stamps with the same
// machine clock), so each batch's time is known to fall before or after it.
import { type FelixClient, NotFoundError, type StreamEvent, connect } from '@felix/client';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type BrokerProcess, durableBrokerForSuite, startBroker } from '../src/index.js';

const YAML = `
streams:
  - { tenant: t1, name: mem }
  - { tenant: t1, name: log, durable: true, fsync: onCommit }
  - { tenant: t1, name: later, durable: true, fsync: onCommit }
  - { tenant: t1, name: keyed, shards: 2, durable: true }
  - { tenant: t1, name: grouped, durable: true, fsync: onCommit }
`;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

function client(broker: BrokerProcess): Promise<FelixClient> {
  return connect({
    servers: [broker.url('tls')],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
  });
}

/** A moment strictly after everything published so far and strictly before anything published
 *  after this resolves, as microseconds (the broker stamps whole milliseconds × 1000). */
async function moment(): Promise<number> {
  const ms = Date.now();
  await waitFor(() => Date.now() > ms + 1, 'the clock to move past a millisecond');
  return (ms + 1) * 1000;
}

describe('record timestamps', () => {
  const suite = durableBrokerForSuite(YAML);

  it('an_offset_for_a_time_is_the_first_record_appended_at_or_after_it', async () => {
    const felix = await client(suite.broker);
    const before = await moment();
    const a = await felix.publishBatch('log', ['a0', 'a1', 'a2']);
    const ab = await moment();
    const b = await felix.publishBatch('log', ['b0', 'b1']);
    const bc = await moment();
    const c = await felix.publish('log', 'c0');
    expect(await felix.offsetForTime('log', 0)).toBe(a.offset);
    expect(await felix.offsetForTime('log', before)).toBe(a.offset);
    expect(await felix.offsetForTime('log', ab)).toBe(b.offset);
    expect(await felix.offsetForTime('log', new Date(ab / 1000))).toBe(b.offset);
    expect(await felix.offsetForTime('log', bc)).toBe(c.offset);
    // An in-memory stream answers from the records it holds, by the same rule.
    const m1 = await felix.publish('mem', 'm1');
    const mm = await moment();
    const m2 = await felix.publish('mem', 'm2');
    expect(await felix.offsetForTime('mem', 0)).toBe(m1.offset);
    expect(await felix.offsetForTime('mem', mm)).toBe(m2.offset);
    await felix.close();
  });

  it('an_offset_for_a_time_past_the_tail_is_absent', async () => {
    const felix = await client(suite.broker);
    await felix.publish('log', 'x');
    await felix.publish('mem', 'x');
    const after = await moment();
    expect(await felix.offsetForTime('log', after)).toBeUndefined();
    expect(await felix.offsetForTime('mem', after)).toBeUndefined();
    expect(await felix.offsetForTime('log', new Date(Date.now() + 3_600_000))).toBeUndefined();
    await expect(felix.offsetForTime('nope', 0)).rejects.toBeInstanceOf(NotFoundError);
    // The request channel still serves after the refusal.
    expect(await felix.offsetForTime('log', after)).toBeUndefined();
    await felix.close();
  });

  it('a_subscription_can_start_from_a_time', async () => {
    const felix = await client(suite.broker);
    await felix.publishBatch('log', ['old0', 'old1']);
    const at = await moment();
    const sent = await felix.publishBatch('log', ['new0', 'new1', 'new2']);
    const it = felix
      .subscribe('log', { from: { time: new Date(at / 1000) } })
      [Symbol.asyncIterator]();
    const got = await take(it, 3);
    expect(got.map((e) => text(e.data))).toEqual(['new0', 'new1', 'new2']);
    expect(got[0]!.offset).toBe(sent.offset);
    await it.return?.();
    // Every shard of a multi-shard stream starts at its own first record at or after the time.
    await felix.publish('keyed', 'k-old', { key: 'a' });
    await felix.publish('keyed', 'k-old', { key: 'b' });
    const kt = await moment();
    await felix.publish('keyed', 'k-new-a', { key: 'a' });
    await felix.publish('keyed', 'k-new-b', { key: 'b' });
    const keyed = felix.subscribe('keyed', { from: { time: kt } })[Symbol.asyncIterator]();
    const both = await take(keyed, 2);
    expect(both.map((e) => text(e.data)).sort()).toEqual(['k-new-a', 'k-new-b']);
    await withDeadline(keyed.return!(), 5_000, 'leaving the merged subscription');
    await felix.close();
  });

  it('a_subscription_from_a_time_nothing_matches_yet_starts_at_the_tail', async () => {
    const felix = await client(suite.broker);
    await felix.publish('later', 'before');
    const at = await moment();
    const it = felix.subscribe('later', { from: { time: at } })[Symbol.asyncIterator]();
    const first = it.next();
    // Subscribed (or about to be): what is published now is at or after the time, and arrives.
    const sent = await felix.publish('later', 'after');
    const got = (await first).value as StreamEvent;
    expect(text(got.data)).toBe('after');
    expect(got.offset).toBe(sent.offset);
    await it.return?.();
    await felix.close();
  });

  it('a_group_record_carries_its_append_time_when_negotiated', async () => {
    const felix = await client(suite.broker);
    const first = await felix.publishBatch('grouped', ['g0', 'g1']);
    const between = await moment();
    const second = await felix.publish('grouped', 'g2');
    const timed = felix.group('grouped', 'timed', { timestamps: true });
    const got = await timed.poll({ max: 10, waitMs: 1_000 });
    expect(got.map((m) => m.offset)).toEqual([first.offset, first.offset! + 1, second.offset]);
    const [t0, t1, t2] = got.map((m) => m.timestampMicros!);
    expect(t0).toBe(t1); // one time per published batch
    expect(t0).toBeLessThan(between);
    expect(t2).toBeGreaterThanOrEqual(between);
    // The same times offsetForTime searches and a timestamped subscription shows.
    expect(await felix.offsetForTime('grouped', t2!)).toBe(second.offset);
    const sub = felix
      .subscribe('grouped', { from: first.offset!, shard: 0, timestamps: true })
      [Symbol.asyncIterator]();
    expect((await take(sub, 3)).map((e) => e.timestampMicros)).toEqual([t0, t1, t2]);
    await sub.return?.();
    // A record handed back and delivered again keeps its time.
    await got[2]!.nack();
    const again = await timed.poll({ max: 10, waitMs: 1_000 });
    expect(again.map((m) => [m.offset, m.attempts, m.timestampMicros])).toEqual([
      [second.offset, 2, t2],
    ]);
    // A group that did not ask gets no times.
    const plain = await felix.group('grouped', 'plain').poll({ max: 10, waitMs: 1_000 });
    expect(plain.length).toBe(3);
    expect(plain.every((m) => m.timestampMicros === undefined)).toBe(true);
    await felix.close();
  });

  it('leaving_a_merged_subscription_ends_every_shard_reader', async () => {
    // Before the fix a merged subscription's readers were closed, not stopped, on `return()`:
    // each resubscribed, and `return()` waited for ever on readers that would never end.
    const felix = await client(suite.broker);
    await felix.publish('keyed', 'x', { key: 'a' });
    await felix.publish('keyed', 'y', { key: 'b' });
    const it = felix.subscribe('keyed', { from: 'earliest' })[Symbol.asyncIterator]();
    expect((await take(it, 1)).length).toBe(1);
    await withDeadline(it.return!(), 5_000, 'leaving the merged subscription');
    await felix.close();
  });
});

const RESTART_YAML = `
streams:
  - { tenant: t1, name: orders, durable: true, fsync: onCommit }
`;

/** A stopped broker of RESTART_YAML started again on its data directory and ports. */
function restartOrders(stopped: BrokerProcess, dir: string): Promise<BrokerProcess> {
  return startBroker({
    yaml: RESTART_YAML,
    dir,
    durable: true,
    port: stopped.port,
    httpPort: stopped.httpPort,
  });
}

describe('event timestamps', () => {
  it('a_subscriber_that_asks_for_timestamps_gets_each_records_append_time', async () => {
    const dir = await tempDir();
    try {
      let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
      const felix = await client(broker);
      // From earliest on a fresh stream: each sees every record, live or from the ring.
      const timed = felix
        .subscribe('orders', { from: 'earliest', timestamps: true })
        [Symbol.asyncIterator]();
      const plain = felix.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator]();
      await felix.publish('orders', 'marker');
      const [markerTimed] = await take(timed, 1);
      const [markerPlain] = await take(plain, 1);
      expect(markerTimed!.timestampMicros).toBeGreaterThan(0);
      expect(markerPlain!.timestampMicros).toBeUndefined();
      const t0 = Date.now() * 1000;
      const first = await felix.publishBatch('orders', ['a', 'b']);
      const t1 = await moment();
      const second = await felix.publish('orders', 'c');
      const t2 = Date.now() * 1000;
      const live = await take(timed, 3);
      expect(live.map((e) => e.offset)).toEqual([first.offset, first.offset! + 1, second.offset]);
      const [a, b, c] = live.map((e) => e.timestampMicros!);
      expect(a).toBe(b); // one time per published batch
      expect(a).toBeGreaterThanOrEqual(t0 - 1000);
      expect(a).toBeLessThan(t1);
      expect(c).toBeGreaterThanOrEqual(t1);
      expect(c).toBeLessThanOrEqual(t2);
      expect(markerTimed!.timestampMicros).toBeLessThanOrEqual(a!);
      // The times are the ones offsetForTime searches.
      expect(await felix.offsetForTime('orders', a!)).toBe(first.offset);
      expect(await felix.offsetForTime('orders', c!)).toBe(second.offset);
      const untimed = await take(plain, 3);
      expect(untimed.every((e) => e.timestampMicros === undefined)).toBe(true);
      await felix.close();
      await broker.stop();
      // From disk after a restart: one history run spans both batches, each record keeps its time.
      broker = await restartOrders(broker, dir.path);
      const again = await client(broker);
      const replay = again
        .subscribe('orders', { from: 'earliest', timestamps: true })
        [Symbol.asyncIterator]();
      const history = await take(replay, 4);
      expect(history.map((e) => [e.offset, e.timestampMicros])).toEqual([
        [markerTimed!.offset, markerTimed!.timestampMicros],
        ...live.map((e) => [e.offset, e.timestampMicros]),
      ]);
      await replay.return?.();
      await again.close();
      await broker.stop();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_group_record_read_from_the_log_after_a_restart_keeps_its_append_time', async () => {
    const dir = await tempDir();
    try {
      let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
      const felix = await client(broker);
      const first = await felix.publishBatch('orders', ['a', 'b']);
      await moment();
      const second = await felix.publish('orders', 'c');
      // Served from the ring: the times each record was appended at.
      const fromRing = await felix
        .group('orders', 'timed', { timestamps: true })
        .poll({ max: 10, waitMs: 1_000 });
      expect(fromRing.map((m) => m.offset)).toEqual([
        first.offset,
        first.offset! + 1,
        second.offset,
      ]);
      await felix.close();
      await broker.stop();
      // After a restart the ring is empty and nothing was acked: the same records come from the
      // log, first deliveries again, with the same times.
      broker = await restartOrders(broker, dir.path);
      const again = await client(broker);
      const fromLog = await again
        .group('orders', 'timed', { timestamps: true })
        .poll({ max: 10, waitMs: 1_000 });
      expect(fromLog.map((m) => [m.offset, m.attempts, m.timestampMicros])).toEqual(
        fromRing.map((m) => [m.offset, 1, m.timestampMicros]),
      );
      expect(fromLog[0]!.timestampMicros).toBeLessThan(fromLog[2]!.timestampMicros!);
      await again.close();
      await broker.stop();
    } finally {
      await dir.cleanup();
    }
  });
});
