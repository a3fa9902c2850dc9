// Goal: the stream guarantees of the broker and @felix/client, end to end over both transports.
// Method: real felix-broker processes (one shared per transport, plus fresh ones for restart,
// SIGKILL and timeout cases), real clients, and raw transport streams for bad input.
import {
  CursorInFutureError,
  CursorTooOldError,
  type FelixClient,
  InvalidRequestError,
  NotFoundError,
  OutcomeUnknownError,
  type StatusEvent,
  type StreamEvent,
  UnknownStreamError,
  connect,
} from '@felix/client';
import { take, tempDir, waitFor } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import { FrameDecoder, decodeMessage, encodeFrame, encodeMessage, shardForKey } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from './broker-process.js';
import { rawAuthed } from './raw-session.js';

const TRANSPORTS = ['tls', 'quic'] as const;
type Transport = (typeof TRANSPORTS)[number];

const SHARED_YAML = `
durable: { segment_bytes: 4096, retention_check_interval_ms: 50 }
streams:
  - { tenant: t1, name: mem }
  - { tenant: t1, name: mem-slow }
  - { tenant: t1, name: log, durable: true, fsync: periodic }
  - { tenant: t1, name: keyed, shards: 4, durable: true }
  - { tenant: t1, name: keyed-together, shards: 4 }
  - { tenant: t1, name: retained, durable: true, fsync: none, retention: { max_bytes: 8192 } }
`;

const RESTART_YAML = `
streams:
  - { tenant: t1, name: orders, durable: true, fsync: onCommit }
`;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

function client(
  broker: BrokerProcess,
  transport: Transport,
  extra: Record<string, unknown> = {},
): Promise<FelixClient> {
  return connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
    // A SIGKILLed broker says nothing; over QUIC only the idle bound notices it.
    idleTimeoutMs: 2_000,
    ...extra,
  });
}

/** Pulls `n` events from a subscription's iterator. */
async function metric(broker: BrokerProcess, pattern: RegExp): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const m = pattern.exec(body);
  return m ? Number(m[1]) : 0;
}

for (const transport of TRANSPORTS) {
  describe(`streams over ${transport}`, () => {
    let shared: BrokerProcess;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      shared = await startBroker({
        yaml: SHARED_YAML,
        dir: dir.path,
        durable: true,
        env: { FELIX_BROKER_AUTH_TIMEOUT_MS: '1500' },
      });
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
      const count = transport === 'quic' ? 600 : 3000;
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

    it('a_frame_with_an_unknown_flag_is_refused', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      const before = await metric(
        shared,
        /felix_broker_bad_input_total\{reason="invalid_flags"\} (\d+)/,
      );
      const bad = encodeFrame(0, new Uint8Array(4));
      new DataView(bad.buffer, bad.byteOffset).setUint16(6, 0x8001); // 0x8000 with another bit: reserved, no layout
      await raw.stream.write(bad);
      expect(await raw.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      expect(await raw.next()).toBeNull(); // the broker ended the stream
      expect(
        await metric(shared, /felix_broker_bad_input_total\{reason="invalid_flags"\} (\d+)/),
      ).toBe(before + 1);
      // The connection and the broker carry on.
      const again = await rawAuthed(conn, 0x0800);
      again.stream.reset(0);
      await conn.close();
    });

    it('an_oversized_frame_before_auth_is_refused', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const stream = await conn.openBidi();
      const header = encodeFrame(0, new Uint8Array(0));
      new DataView(header.buffer, header.byteOffset).setUint32(8, 64 * 1024 + 1);
      await stream.write(header); // the header alone: no body is ever sent
      const decoder = new FrameDecoder();
      const frames: unknown[] = [];
      for await (const chunk of stream)
        for (const f of decoder.push(chunk)) frames.push(decodeMessage(f.payload));
      expect(frames).toEqual([expect.objectContaining({ type: 'error' })]);
      expect(
        await metric(shared, /felix_broker_bad_input_total\{reason="frame_too_large"\} (\d+)/),
      ).toBeGreaterThan(0);
      await conn.close();
    });

    it('a_connection_that_never_authenticates_is_closed', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const info = await conn.closed;
      expect(info.code).toBe(1);
      expect(info.reason).toBe('authentication timeout');
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

    it('a_json_publish_is_acknowledged_with_its_offset', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      await raw.stream.write(
        encodeMessage({
          type: 'publish_batch',
          tenant_id: 't1',
          namespace: 'default',
          stream: 'log',
          payloads: [new TextEncoder().encode('j1'), new TextEncoder().encode('j2')],
          request_id: 7,
          ack: 'per_batch',
        }),
      );
      const ok = (await raw.next()) as { type: string; request_id: number; offset: number };
      expect(ok).toMatchObject({ type: 'publish_ok', request_id: 7 });
      expect(typeof ok.offset).toBe('number');
      const felix = await client(shared, transport);
      const got = await take(
        felix.subscribe('log', { from: ok.offset, shard: 0 })[Symbol.asyncIterator](),
        2,
      );
      expect(got.map((e) => text(e.data))).toEqual(['j1', 'j2']);
      await felix.close();
      raw.stream.reset(0);
      await conn.close();
    });

    it('a_durable_stream_replays_from_earliest_after_a_restart', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport);
        const sent = await felix.publishBatch(
          'orders',
          Array.from({ length: 30 }, (_, i) => `o${i}`),
        );
        await felix.close();
        await broker.stop();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        const again = await client(broker, transport);
        const got = await take(
          again.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator](),
          30,
        );
        expect(got.map((e) => text(e.data))).toEqual(Array.from({ length: 30 }, (_, i) => `o${i}`));
        expect(got[0]!.offset).toBe(sent.offset);
        await again.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });

    it('an_acked_publish_survives_a_broker_sigkill', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport, { reconnect: { attemptsMax: 1 } });
        const acked = new Map<number, string>();
        const failures: unknown[] = [];
        let n = 0;
        const writers = Array.from({ length: 16 }, async () => {
          for (;;) {
            const body = `w${n++}`;
            try {
              const r = await felix.publish('orders', body);
              acked.set(r.offset!, body);
            } catch (err) {
              failures.push(err);
              return;
            }
          }
        });
        await waitFor(() => acked.size >= 300, '300 acked publishes');
        await broker.kill(); // SIGKILL mid-stream, with publishes in flight
        await Promise.all(writers);
        // Every publish the connection loss cut off is reported as outcome-unknown.
        expect(failures.length).toBeGreaterThan(0);
        for (const f of failures) expect(f).toBeInstanceOf(OutcomeUnknownError);
        await felix.close();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        const reader = await client(broker, transport);
        const maxAcked = Math.max(...acked.keys());
        const got = await take(
          reader.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator](),
          maxAcked + 1,
        );
        const byOffset = new Map(got.map((e) => [e.offset, text(e.data)]));
        for (const [offset, body] of acked) expect(byOffset.get(offset)).toBe(body);
        await reader.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });

    it('the_client_resumes_a_subscription_after_the_broker_restarts', async () => {
      const dir = await tempDir();
      try {
        let broker = await startBroker({ yaml: RESTART_YAML, dir: dir.path, durable: true });
        const felix = await client(broker, transport);
        const statuses: StatusEvent[] = [];
        const statusCtl = new AbortController();
        void (async () => {
          for await (const s of felix.status({ signal: statusCtl.signal })) statuses.push(s);
        })();
        const it = felix.subscribe('orders', { from: 'earliest' })[Symbol.asyncIterator]();
        await felix.publishBatch(
          'orders',
          Array.from({ length: 10 }, (_, i) => `a${i}`),
        );
        const before = await take(it, 10);
        await broker.kill();
        broker = await startBroker({
          yaml: RESTART_YAML,
          dir: dir.path,
          durable: true,
          port: broker.port,
          httpPort: broker.httpPort,
        });
        await waitFor(
          () => statuses.some((s) => s.type === 'connected' && statuses.indexOf(s) > 0),
          'the client to reconnect',
          20_000,
        );
        await felix.publishBatch(
          'orders',
          Array.from({ length: 10 }, (_, i) => `b${i}`),
        );
        const after = await take(it, 10);
        const all = [...before, ...after];
        expect(all.map((e) => text(e.data))).toEqual([
          ...before.map((e) => text(e.data)),
          ...Array.from({ length: 10 }, (_, i) => `b${i}`),
        ]);
        expect(all.map((e) => e.offset)).toEqual(Array.from({ length: 20 }, (_, i) => i));
        expect(statuses.map((s) => s.type)).toContain('reconnecting');
        statusCtl.abort();
        await felix.close();
        await broker.stop();
      } finally {
        await dir.cleanup();
      }
    });
  });
}
