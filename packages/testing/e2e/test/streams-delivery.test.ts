// Goal: the stream guarantees @felix/client gives against a real broker, over both transports:
// delivery to every subscriber, gapless resume, a slow subscriber never blocking a publisher,
// cursor refusals, per-shard order, keyed routing, typed refusals, and unacknowledged publishes
// (alone, and many made in one turn).
// Method: one real felix-broker process per transport shared by these tests, real clients; a
// raw session only where the test must see every frame the broker answers with.
import { getEventListeners } from 'node:events';
import {
  CursorInFutureError,
  CursorTooOldError,
  InvalidArgumentError,
  InvalidRequestError,
  NotFoundError,
  type StreamEvent,
  UnknownStreamError,
} from '@felix/client';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import { encodePublishBatch, shardForKey } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokerProcess,
  brokerMetric as metric,
  rawAuthed,
  startBroker,
} from '../src/index.js';
import { TRANSPORTS, client, text as maybeText, tcpRelay } from './support.js';

const SHARED_YAML = `
durable: { segment_bytes: 4096, retention_check_interval_ms: 50 }
streams:
  - { tenant: t1, name: mem }
  - { tenant: t1, name: mem-slow }
  - { tenant: t1, name: unacked }
  - { tenant: t1, name: unacked-turn }
  - { tenant: t1, name: unacked-close, durable: true, fsync: onCommit }
  - { tenant: t1, name: log, durable: true, fsync: periodic }
  - { tenant: t1, name: keyed, shards: 4, durable: true }
  - { tenant: t1, name: keyed-together, shards: 4 }
  - { tenant: t1, name: ready }
  - { tenant: t1, name: ready-merged, shards: 4 }
  - { tenant: t1, name: retained, durable: true, fsync: none, retention: { max_bytes: 8192 } }
`;

const text = (b: Uint8Array) => maybeText(b)!;

for (const transport of TRANSPORTS) {
  describe(`streams over ${transport}`, () => {
    let shared: BrokerProcess;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      shared = await startBroker({ yaml: SHARED_YAML, dir: dir.path, durable: true });
    });
    afterAll(async () => {
      await shared?.stop();
      await cleanup?.();
    });

    it('a_publish_is_delivered_to_every_subscriber', async () => {
      const subscribers = await Promise.all([0, 1, 2].map(() => client(shared, transport)));
      const iters = subscribers.map((c) =>
        c.subscribe('mem', { from: 'earliest' })[Symbol.asyncIterator](),
      );
      // From earliest: the stream is fresh on this broker, so each sees exactly what follows.
      const firsts = iters.map((it) => it.next());
      const publisher = await client(shared, transport);
      const pub = publisher.publisher('mem', { lingerMs: 1 });
      const sent = await Promise.all(
        Array.from({ length: 40 }, (_, i) => pub.publish(new TextEncoder().encode(`m${i}`))),
      );
      const offsets = sent.map((s) => s.offset!);
      for (const [i, it] of iters.entries()) {
        const first = (await firsts[i]!).value as StreamEvent;
        const rest = await take(it, 39);
        const got = [first, ...rest];
        expect(got.map((e) => text(e.data))).toEqual(Array.from({ length: 40 }, (_, k) => `m${k}`));
        expect(got.map((e) => e.offset)).toEqual(offsets);
      }
      await Promise.all([...subscribers, publisher].map((c) => c.close()));
    });

    it('unacknowledged_publishes_made_before_close_reach_the_broker', async () => {
      const felix = await client(shared, transport);
      const n = 2_000;
      // The newcomer's loop: fire and forget, then close at once.
      for (let i = 0; i < n; i++) void felix.publish('unacked-close', `c${i}`, { ack: false });
      await felix.close();
      const reader = await client(shared, transport);
      const it = reader.subscribe('unacked-close', { from: 'earliest' })[Symbol.asyncIterator]();
      const got = await take(it, n);
      expect(got.map((e) => text(e.data))).toEqual(Array.from({ length: n }, (_, i) => `c${i}`));
      await reader.close();
    });

    it('an_unacknowledged_publish_is_delivered_and_never_answered', async () => {
      const felix = await client(shared, transport);
      // From earliest: only this test writes the stream, so the subscriber sees exactly this.
      const it = felix.subscribe('unacked', { from: 'earliest' })[Symbol.asyncIterator]();
      const firstP = it.next();
      // Resolved once written, with no offset: no answer will ever name one.
      const sent = await felix.publish('unacked', 'fire and forget', { ack: false });
      expect(sent.offset).toBeNull();
      const first = (await firstP).value as StreamEvent;
      expect(text(first.data)).toBe('fire and forget');
      // The same request on a raw stream, then an acked one. The broker appends them in order
      // and answers as it appends, so an answer to the first would come before the second's.
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      const scope = { tenantId: 't1', namespace: 'default', stream: 'unacked' };
      const enc = (s: string) => new TextEncoder().encode(s);
      await raw.stream.write(encodePublishBatch({ ...scope, payloads: [enc('raw unacked')] }));
      await raw.stream.write(
        encodePublishBatch({
          ...scope,
          payloads: [enc('raw acked')],
          requestId: 2,
          ackMode: 'per_batch',
        }),
      );
      const answer = (await raw.next()) as { type: string; requestId: number; offset: number };
      expect(answer).toMatchObject({ type: 'binary_publish_ack', status: 'ok', requestId: 2 });
      // Nothing else comes before the broker ends the stream the raw session ends.
      await raw.stream.end();
      expect(await raw.next()).toBeNull();
      // Both were delivered, the unacked one at the offset just before the acked one's.
      const [unacked, acked] = await take(it, 2);
      expect([text(unacked!.data), text(acked!.data)]).toEqual(['raw unacked', 'raw acked']);
      expect([unacked!.offset, acked!.offset]).toEqual([answer.offset - 1, answer.offset]);
      await it.return?.();
      await conn.close();
      await felix.close();
    });

    it('unacknowledged_publishes_in_one_turn_reach_a_subscriber_in_order', async () => {
      const felix = await client(shared, transport);
      // From earliest: only this test writes the stream, so the subscriber sees exactly this.
      const it = felix.subscribe('unacked-turn', { from: 'earliest' })[Symbol.asyncIterator]();
      const firstP = it.next();
      const n = 1_000;
      // Counted where the broker accepts a batch, not where it encodes one: a subscriber still
      // reading history gets records through history pages, which encode no live batch.
      const batches = /felix_broker_publishes_total\{frame="binary"\} (\d+)/;
      const batchesBefore = await metric(shared, batches);
      const sent = await Promise.all(
        Array.from({ length: n }, (_, i) => felix.publish('unacked-turn', `u${i}`, { ack: false })),
      );
      expect(sent.every((s) => s.offset === null)).toBe(true);
      const first = (await firstP).value as StreamEvent;
      const got = [first, ...(await take(it, n - 1))];
      expect(got.map((e) => text(e.data))).toEqual(Array.from({ length: n }, (_, i) => `u${i}`));
      // No gap: the offsets run on one by one from the first.
      expect(got.map((e) => e.offset - first.offset)).toEqual(
        Array.from({ length: n }, (_, i) => i),
      );
      // They travelled as one frame, so the broker accepted one batch, not n (the bound leaves
      // room for another test's stray publish).
      expect((await metric(shared, batches)) - batchesBefore).toBeLessThan(n / 100);
      await it.return?.();
      await felix.close();
    });

    it('a_resume_from_an_offset_is_gapless_under_concurrent_publishes', async () => {
      const felix = await client(shared, transport);
      const first = await felix.publish('log', 'start');
      let stop = false;
      let published = 0;
      const pub = felix.publisher('log', { lingerMs: 1 });
      const pumping = (async () => {
        while (!stop) {
          await Promise.all(
            Array.from({ length: 20 }, () =>
              pub.publish(new TextEncoder().encode(`p${published++}`)),
            ),
          );
        }
      })();
      // Read part of the log, stop, and resume from the offset after the last one seen.
      const sub1 = felix.subscribe('log', { from: first.offset!, shard: 0 });
      const part = await take(sub1[Symbol.asyncIterator](), 150);
      sub1.close();
      const resumeAt = part[part.length - 1]!.offset + 1;
      const sub2 = felix.subscribe('log', { from: resumeAt, shard: 0 });
      const rest = await take(sub2[Symbol.asyncIterator](), 300);
      stop = true;
      await pumping;
      sub2.close();
      const all = [...part, ...rest].map((e) => e.offset);
      expect(all).toEqual(Array.from({ length: all.length }, (_, i) => first.offset! + i));
      expect(rest.every((e) => e.lostBefore === 0)).toBe(true);
      await felix.close();
    });

    it('a_slow_subscriber_never_blocks_a_publisher', async () => {
      const slow = await client(shared, transport);
      const fast = await client(shared, transport);
      const publisher = await client(shared, transport);
      const slowIt = slow.subscribe('mem-slow', { queueCapacity: 2 })[Symbol.asyncIterator]();
      const slowFirst = slowIt.next(); // registers, then is never pulled again until the end
      const fastIt = fast.subscribe('mem-slow', { queueCapacity: 100_000 })[Symbol.asyncIterator]();
      const fastFirst = fastIt.next();
      // Both are registered once each has received a marker published after its subscribe.
      let registered = false;
      void Promise.all([slowFirst, fastFirst]).then(() => {
        registered = true;
      });
      while (!registered) await publisher.publish('mem-slow', 'marker');
      // Over QUIC 600 records once overflowed two envelopes of one record each; contiguous records
      // now share an envelope (up to EVENT_COALESCE_BYTES_MAX), so more are needed to overflow.
      const count = 3000;
      const payload = new Uint8Array(1024).fill(7);
      // The fast subscriber reads as things arrive (markers first, then the records).
      const fastReading = (async () => {
        const got: StreamEvent[] = [];
        for (;;) {
          const ev = (await fastIt.next()).value as StreamEvent;
          if (ev.data.byteLength === 1024) got.push(ev);
          if (got.length === count) return got;
        }
      })();
      const pub = publisher.publisher('mem-slow', { lingerMs: 0, maxBatchRecords: 1 });
      // Every publish is acknowledged although one subscriber reads nothing.
      const acks = await Promise.all(Array.from({ length: count }, () => pub.publish(payload)));
      expect(acks.length).toBe(count);
      const fastGot = await fastReading;
      expect(fastGot.length).toBe(count);
      expect(fastGot.every((e) => e.lostBefore === 0)).toBe(true);
      expect(
        await metric(shared, /felix_broker_fanout_dropped_records_total (\d+)/),
      ).toBeGreaterThan(0);
      // The slow subscriber now reads: what its queue dropped shows as a gap, not silently.
      await slowFirst;
      let sawGap = false;
      const markers = (async () => {
        while (!sawGap) await publisher.publish('mem-slow', 'marker');
      })();
      while (!sawGap) {
        const r = await slowIt.next();
        if (r.value!.lostBefore > 0) sawGap = true;
      }
      await markers;
      await Promise.all([slow, fast, publisher].map((c) => c.close()));
    });

    it('a_subscribe_below_retention_answers_too_old', async () => {
      const felix = await client(shared, transport);
      const payload = new Uint8Array(512).fill(1);
      for (let i = 0; i < 10; i++)
        await felix.publishBatch(
          'retained',
          Array.from({ length: 10 }, () => payload),
        );
      const err = await waitFor(
        async () => {
          const it = felix.subscribe('retained', { from: 0, shard: 0 })[Symbol.asyncIterator]();
          try {
            await it.next();
            await it.return?.();
            await felix.publishBatch(
              'retained',
              Array.from({ length: 10 }, () => payload),
            );
            return null;
          } catch (e) {
            return e;
          }
        },
        'retention to trim the head',
        20_000,
      );
      expect(err).toBeInstanceOf(CursorTooOldError);
      expect((err as CursorTooOldError).available).toBeGreaterThan(0);
      // Earliest still works: it starts at the oldest retained offset.
      const first = await take(
        felix.subscribe('retained', { from: 'earliest' })[Symbol.asyncIterator](),
        1,
      );
      expect(first[0]!.offset).toBeGreaterThanOrEqual((err as CursorTooOldError).available);
      await felix.close();
    });

    it('a_subscription_left_with_return_while_a_next_waits_ends_at_once', async () => {
      // Before, on a quiet stream return() waited for the next record to wake the pending
      // next() (for ever, if none came), and the broker kept the subscriptions open meanwhile.
      const felix = await client(shared, transport);
      const subs = () => metric(shared, /^felix_broker_subscriptions (\d+)/m);
      try {
        const before = await subs();
        for (const [stream, shards] of [
          ['mem', 1],
          ['keyed-together', 4],
        ] as const) {
          const it = felix.subscribe(stream, { from: 'latest' })[Symbol.asyncIterator]();
          const pending = it.next();
          await waitFor(async () => (await subs()) >= before + shards, `${stream} subscribed`);
          await withDeadline(it.return!(), 5_000, `return() of ${stream}`);
          expect(await withDeadline(pending, 5_000, 'the pending next()')).toMatchObject({
            done: true,
          });
          await waitFor(async () => (await subs()) === before, `${stream} released`);
        }
      } finally {
        await felix.close();
      }
    });

    it('finished_subscriptions_leave_no_listener_on_the_callers_signal', async () => {
      // Before, each subscription made with the app's own signal added a listener to it that
      // stayed after the subscription ended: 1,000 on a shutdown signal after 1,000 of them.
      const felix = await client(shared, transport);
      const appSignal = new AbortController().signal;
      try {
        for (let i = 0; i < 20; i++) {
          const it = felix.subscribe('mem', { signal: appSignal })[Symbol.asyncIterator]();
          let got = false;
          const first = it.next().then((r) => {
            got = true;
            return r;
          });
          // From `latest`: publish until the subscription, once placed, reads one.
          await waitFor(async () => {
            if (!got) await felix.publish('mem', `s-${i}`);
            return got;
          }, 'a record to read');
          expect((await first).done).toBe(false);
          await it.return?.();
        }
        expect(getEventListeners(appSignal, 'abort')).toHaveLength(0);
      } finally {
        await felix.close();
      }
    });

    it('a_publish_after_ready_is_delivered_to_a_latest_subscription', async () => {
      // Before, a `'latest'` subscription took its position at the first next(): a record
      // published between subscribe() and iterating was missed, and nothing said when the
      // position was taken. The publish goes on another stream of the same connection.
      const felix = await client(shared, transport);
      const enc = new TextEncoder();
      try {
        await felix.publish('ready', 'before'); // below the tail the subscription starts at
        const sub = felix.subscribe('ready');
        await sub.ready();
        await felix.publish('ready', 'after');
        const it = sub[Symbol.asyncIterator]();
        const first = await withDeadline(it.next(), 10_000, 'the record published after ready()');
        expect(text((first.value as StreamEvent).data)).toBe('after');
        await it.return?.();
        // Merged: ready() waits for every shard, so one record per shard arrives.
        const { shards, routing } = await felix.shards('ready-merged');
        const keys = new Map<number, string>();
        for (let i = 0; keys.size < shards; i++)
          keys.set(shardForKey(enc.encode(`k${i}`), shards, routing), `k${i}`);
        const merged = felix.subscribe('ready-merged');
        await merged.ready();
        for (const key of keys.values()) await felix.publish('ready-merged', key, { key });
        const got = await withDeadline(
          take(merged[Symbol.asyncIterator](), shards),
          10_000,
          'a record on every shard',
        );
        expect(new Map(got.map((e) => [e.shard, text(e.data)]))).toEqual(keys);
        merged.close();
      } finally {
        await felix.close();
      }
    });

    it('a_merged_subscription_over_many_shards_warns_of_no_listener_leak', async () => {
      const felix = await client(shared, transport);
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      const ac = new AbortController();
      try {
        // Each shard's reader waits on the subscription's signal while it opens (its event
        // stream, its answer, its stream's auth): four shards held more than Node's default 10.
        for (let i = 0; i < 200; i++) await felix.publish('ready-merged', `r${i}`);
        const merged = felix.subscribe('ready-merged', { from: 'earliest', signal: ac.signal });
        const got = await withDeadline(take(merged[Symbol.asyncIterator](), 200), 10_000, 'all');
        expect(got).toHaveLength(200);
        merged.close();
        // Warnings are emitted on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
      } finally {
        process.off('warning', onWarning);
        ac.abort();
        await felix.close();
      }
    });

    it('bad_subscribe_options_are_refused_at_the_call', async () => {
      const felix = await client(shared, transport);
      try {
        for (const opts of [
          { from: -1, shard: 0 },
          { from: 1.5, shard: 0 },
          { from: 'newest' as 'latest' },
          { shard: -1 },
          { bufferBatches: 0 },
          { queueCapacity: -3 },
        ]) {
          expect(() => felix.subscribe('mem', opts), JSON.stringify(opts)).toThrow(
            InvalidArgumentError,
          );
        }
      } finally {
        await felix.close();
      }
    });

    it.skipIf(transport !== 'tls')(
      'a_resume_below_retention_after_a_reconnect_reports_the_loss_on_the_next_event',
      async () => {
        // Before, such a loss was only a `gap` status: the next event said lostBefore 0, and a
        // caller checking lostBefore (as the client README shows) never saw it.
        const relay = await tcpRelay(shared.port);
        const sub = await client(shared, 'tls', { servers: [`tls://127.0.0.1:${relay.port}`] });
        const pub = await client(shared, transport);
        try {
          const start = (await pub.publish('retained', 'start')).offset!;
          const it = sub.subscribe('retained', { from: start, shard: 0 })[Symbol.asyncIterator]();
          expect((await it.next()).value?.offset).toBe(start);
          relay.block(true);
          relay.cut();
          // While the subscriber is away, retention trims past where it resumes.
          const payload = new Uint8Array(512).fill(3);
          await waitFor(
            async () => {
              await pub.publishBatch(
                'retained',
                Array.from({ length: 10 }, () => payload),
              );
              const probe = pub.subscribe('retained', { from: start + 1, shard: 0 });
              const pit = probe[Symbol.asyncIterator]();
              try {
                await pit.next();
                await pit.return?.();
                return false;
              } catch (e) {
                return e instanceof CursorTooOldError;
              }
            },
            'retention to trim past the subscriber',
            20_000,
          );
          relay.block(false);
          const next = (await withDeadline(it.next(), 20_000, 'the event after the resume'))
            .value as StreamEvent;
          expect(next.lostBefore).toBeGreaterThan(0);
          expect(next.lostBefore).toBe(next.offset - (start + 1));
          await it.return?.();
        } finally {
          await sub.close();
          await pub.close();
          await relay.close();
        }
      },
    );

    it('a_subscribe_past_the_tail_answers_in_future', async () => {
      const felix = await client(shared, transport);
      const r = await felix.publish('log', 'tail');
      const tail = r.offset! + 1;
      const it = felix.subscribe('log', { from: tail + 10, shard: 0 })[Symbol.asyncIterator]();
      const err = await it.next().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CursorInFutureError);
      expect((err as CursorInFutureError).available).toBe(tail);
      await felix.close();
    });

    it('ordering_is_per_shard', async () => {
      const felix = await client(shared, transport);
      const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      // From earliest: the stream is fresh on this broker and only this test writes it.
      const it = felix.subscribe('keyed', { from: 'earliest' })[Symbol.asyncIterator]();
      const firstP = it.next();
      const pub = felix.publisher('keyed', { lingerMs: 1 });
      const perKey = 25;
      await Promise.all(
        keys.flatMap((k) =>
          Array.from({ length: perKey }, (_, i) =>
            pub.publish(new TextEncoder().encode(`${k}:${i}`), {
              key: new TextEncoder().encode(k),
            }),
          ),
        ),
      );
      const events = [
        (await firstP).value as StreamEvent,
        ...(await take(it, keys.length * perKey - 1)),
      ];
      const lastSeq = new Map<string, number>();
      const shardOf = new Map<string, number>();
      const lastOffset = new Map<number, number>();
      for (const e of events) {
        const [k, seq] = text(e.data).split(':') as [string, string];
        expect(Number(seq)).toBe((lastSeq.get(k) ?? -1) + 1);
        lastSeq.set(k, Number(seq));
        expect(shardOf.get(k) ?? e.shard).toBe(e.shard);
        shardOf.set(k, e.shard);
        expect(e.offset).toBeGreaterThan(lastOffset.get(e.shard) ?? -1);
        lastOffset.set(e.shard, e.offset);
      }
      expect(new Set(shardOf.values()).size).toBeGreaterThan(1);
      await felix.close();
    });

    it('keyed_publishes_made_together_land_on_their_own_keys_shards', async () => {
      const felix = await client(shared, transport);
      const { shards, routing } = await felix.shards('keyed-together');
      const enc = new TextEncoder();
      const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      const it = felix.subscribe('keyed-together', { from: 'earliest' })[Symbol.asyncIterator]();
      const firstP = it.next();
      // One turn, keys interleaved: the client may gather per key, never across keys.
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          keys.map((k) => felix.publish('keyed-together', `${k}:${i}`, { key: k })),
        ).flat(),
      );
      const events = [(await firstP).value as StreamEvent, ...(await take(it, 63))];
      const seen = new Map<string, number[]>();
      for (const e of events) {
        const [k, seq] = text(e.data).split(':') as [string, string];
        expect(e.shard).toBe(shardForKey(enc.encode(k), shards, routing));
        seen.set(k, [...(seen.get(k) ?? []), Number(seq)]);
      }
      for (const k of keys) expect(seen.get(k)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      await felix.close();
    });

    it('a_keyed_publish_answers_the_shard_its_record_went_to', async () => {
      // Before, a standalone client answered shard null unless shards() had been called: the
      // README's `subscribe(stream, { from: offset, shard })` could not be written from it.
      const felix = await client(shared, transport);
      try {
        const r = await felix.publish('keyed', 'x', { key: 'order-17' });
        const enc = new TextEncoder();
        const { shards, routing } = await felix.shards('keyed');
        expect(r.shard).toBe(shardForKey(enc.encode('order-17'), shards, routing));
        const it = felix
          .subscribe('keyed', { from: r.offset!, shard: r.shard! })
          [Symbol.asyncIterator]();
        expect(text((await it.next()).value!.data)).toBe('x');
        await it.return?.();
      } finally {
        await felix.close();
      }
    });

    it('a_publish_the_wire_cannot_carry_is_refused_alone_and_frees_what_it_took', async () => {
      // Before, a key over 65,535 bytes threw from the end-of-turn flush and killed the process
      // (try/catch could not catch it); a batch with one took a window slot it never gave back,
      // so after 256 of them every acked publish on the connection timed out; and a batch over
      // 16 MiB in all went out and took the connection down with every publish beside it.
      const felix = await client(shared, transport);
      try {
        const longKey = 'k'.repeat(70_000);
        await expect(felix.publish('mem', 'x', { key: longKey })).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        await expect(
          felix.publish('mem', new ArrayBuffer(8) as unknown as Uint8Array),
        ).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(felix.publish('m'.repeat(70_000), 'x')).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
        for (let i = 0; i < 300; i++) {
          await expect(felix.publishBatch('mem', ['a'], { key: longKey })).rejects.toBeInstanceOf(
            InvalidArgumentError,
          );
        }
        const mib = new Uint8Array(1024 * 1024);
        const [big, beside] = await Promise.allSettled([
          felix.publishBatch(
            'log',
            Array.from({ length: 17 }, () => mib),
          ),
          felix.publish('log', 'beside'),
        ]);
        expect(big.status).toBe('rejected');
        expect((big as PromiseRejectedResult).reason).toBeInstanceOf(InvalidArgumentError);
        expect(beside.status).toBe('fulfilled');
        // Under the bound in payload bytes alone, over it with each record's 4-byte length.
        const small = new Uint8Array(835);
        await expect(
          felix.publishBatch(
            'log',
            Array.from({ length: 20_000 }, () => small),
          ),
        ).rejects.toBeInstanceOf(InvalidArgumentError);
        // Still every window slot: acked publishes go through.
        const acked = await Promise.all(
          Array.from({ length: 300 }, (_, i) => felix.publish('mem', `after-${i}`)),
        );
        expect(acked).toHaveLength(300);
      } finally {
        await felix.close();
      }
    });

    it('a_publisher_refuses_only_the_record_the_wire_cannot_carry_never_its_batch_neighbours', async () => {
      // Before, the publisher gathered records without the one-frame bound: a record the wire
      // cannot carry failed every record gathered beside it, and two records each valid alone
      // (900 KiB, then 15.5 MiB, under the 1 MiB batch trigger) failed together as one batch
      // over 16 MiB, with InvalidArgumentError "split it", a split the caller cannot make.
      const felix = await client(shared, transport);
      try {
        const pub = felix.publisher('log', { lingerMs: 60_000 });
        const outcome = (p: Promise<{ offset: number | null }>) =>
          p.then(
            (r) => r.offset,
            (e: unknown) => e,
          );
        const before = outcome(pub.publish(new Uint8Array(10).fill(1)));
        const tooBig = outcome(pub.publish(new Uint8Array(17 * 1024 * 1024)));
        const small = outcome(pub.publish(new Uint8Array(900 * 1024).fill(2)));
        const large = outcome(pub.publish(new Uint8Array(15.5 * 1024 * 1024).fill(3)));
        await pub.flush();
        expect(await tooBig).toBeInstanceOf(InvalidArgumentError);
        const offsets = [await before, await small, await large];
        expect(offsets.every((o) => typeof o === 'number')).toBe(true);
        expect(() => pub.send(new Uint8Array(17 * 1024 * 1024))).toThrow(InvalidArgumentError);
        const [first, , last] = offsets as number[];
        expect(last).toBe(first! + 2);
        const read = await take(
          felix.subscribe('log', { from: first!, shard: 0 })[Symbol.asyncIterator](),
          3,
        );
        expect(read.map((e) => [e.offset, e.data.byteLength, e.data[0]])).toEqual([
          [first, 10, 1],
          [first! + 1, 900 * 1024, 2],
          [last, 15.5 * 1024 * 1024, 3],
        ]);
        await pub.close();
      } finally {
        await felix.close();
      }
    });

    it('unknown_streams_and_out_of_range_shards_get_typed_refusals', async () => {
      const felix = await client(shared, transport);
      const missing = await felix.publish('nope', 'x').catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      expect((missing as NotFoundError).brokerCode).toBe('not_found');
      const badShard = await felix
        .subscribe('mem', { shard: 99 })
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect(badShard).toBeInstanceOf(InvalidRequestError);
      const unknownSub = await felix
        .subscribe('nope')
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => e);
      expect(unknownSub).toBeInstanceOf(UnknownStreamError);
      // The connection is still good.
      expect((await felix.publish('mem', 'after')).offset).not.toBeNull();
      await felix.close();
    });
  });
}
