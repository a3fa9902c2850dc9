// Goal: the client's pure parts keep their bounds. Method: direct calls with pinned randomness.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  decodeEventBatch,
  decodeEventBatchPieces,
  encodeEventBatch,
  encodeMessage,
} from '@felix/wire';
import {
  BoundedQueue,
  FrameStream,
  PUBLISHER_UNACKED_BYTES_HIGH,
  PUBLISHER_UNACKED_RECORDS_HIGH,
  PUBLISHER_UNACKED_RECORDS_MAX,
  Publisher,
  PublisherFullError,
  backoffDelayMs,
  brokerErrorFor,
} from './units.js';

/** Waits (by turns of the event loop, with a deadline) until `cond` holds. */
async function waitUntil(cond: () => boolean, deadlineMs = 5000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met before the deadline');
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

describe('client units', () => {
  it('reconnect_delays_are_full_jitter_below_a_capped_exponential', () => {
    const opts = { baseMs: 100, maxMs: 2000 };
    expect(backoffDelayMs(0, { ...opts, random: () => 0.999 })).toBe(99);
    expect(backoffDelayMs(3, { ...opts, random: () => 0.5 })).toBe(400);
    expect(backoffDelayMs(30, { ...opts, random: () => 0.999 })).toBe(1998);
    expect(backoffDelayMs(5, { ...opts, random: () => 0 })).toBe(0);
  });

  it('a_full_bounded_queue_makes_the_writer_wait', async () => {
    const q = new BoundedQueue<number>(2);
    await q.push(1);
    await q.push(2);
    let pushed = false;
    const third = q.push(3).then(() => {
      pushed = true;
    });
    await Promise.resolve();
    expect(pushed).toBe(false);
    expect(await q.pull()).toBe(1);
    await third;
    expect(pushed).toBe(true);
    q.close();
    expect([await q.pull(), await q.pull(), await q.pull()]).toEqual([2, 3, undefined]);
  });

  it('a_writer_woken_by_room_leaves_no_listener_on_its_signal', async () => {
    // Before, every wait for room added an abort listener that stayed: 5,980 on a merged
    // subscription's signal after 6,000 events, and its throughput fell as they piled up.
    const q = new BoundedQueue<number>(1);
    const signal = new AbortController().signal;
    await q.push(0, signal);
    for (let i = 1; i <= 200; i++) {
      const waiting = q.push(i, signal);
      expect(await q.pull()).toBe(i - 1);
      expect(await waiting).toBe(true);
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('a_bounded_queue_with_a_byte_bound_makes_the_writer_wait_on_bytes_not_items', async () => {
    const q = new BoundedQueue<Uint8Array>(64, { bytesMax: 1000, weigh: (b) => b.length });
    await q.push(new Uint8Array(600));
    let pushed = false;
    const second = q.push(new Uint8Array(600)).then(() => {
      pushed = true;
    });
    await Promise.resolve();
    expect(pushed).toBe(false); // 1,200 bytes would exceed 1,000 with only two items queued
    expect((await q.pull())?.length).toBe(600);
    await second;
    expect(q.queuedBytes).toBe(600);
    // An empty queue takes an item heavier than the bound: nothing could ever carry it otherwise.
    await q.pull();
    await q.push(new Uint8Array(5000));
    expect(q.queuedBytes).toBe(5000);
  });

  it('a_publisher_batches_and_gives_each_record_its_own_offset', async () => {
    const sent: number[] = [];
    let next = 100;
    const pub = new Publisher(
      's',
      async (payloads) => {
        sent.push(payloads.length);
        const offset = next;
        next += payloads.length;
        return { offset, shard: 0 };
      },
      { lingerMs: 5, maxBatchRecords: 3 },
    );
    const enc = new TextEncoder();
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => pub.publish(enc.encode(String(i)))),
    );
    expect(results.map((r) => r.offset)).toEqual([100, 101, 102, 103, 104]);
    expect(sent).toEqual([3, 2]);
    await pub.close();
  });

  it('an_empty_key_and_no_key_go_in_separate_batches', async () => {
    const sent: Array<{ n: number; key: string }> = [];
    const pub = new Publisher(
      's',
      async (payloads, key) => {
        sent.push({ n: payloads.length, key: key === undefined ? 'none' : `[${key.length}]` });
        return { offset: 0, shard: 0 };
      },
      { lingerMs: 5 },
    );
    const enc = new TextEncoder();
    // An empty key routes by the hash of no bytes; no key does not: they must not share a batch.
    await Promise.all([
      pub.publish(enc.encode('a'), { key: new Uint8Array(0) }),
      pub.publish(enc.encode('b')),
      pub.publish(enc.encode('c'), { key: new Uint8Array(0) }),
      pub.publish(enc.encode('d')),
    ]);
    expect(sent.sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { n: 2, key: '[0]' },
      { n: 2, key: 'none' },
    ]);
    await pub.close();
  });

  it('a_failed_publisher_batch_rejects_each_of_its_records_with_the_error', async () => {
    const boom = new Error('append failed');
    const pub = new Publisher('s', async () => Promise.reject(boom), { lingerMs: 0 });
    const enc = new TextEncoder();
    const outcomes = await Promise.allSettled(
      [1, 2, 3].map((i) => pub.publish(enc.encode(`${i}`))),
    );
    expect(outcomes).toEqual([1, 2, 3].map(() => ({ status: 'rejected', reason: boom })));
    await pub.close();
  });

  it('records_sent_without_a_promise_are_acknowledged_in_batches_and_flush_waits_for_them', async () => {
    const sent: number[] = [];
    const acks: Array<() => void> = [];
    const pub = new Publisher(
      's',
      (payloads) => {
        sent.push(payloads.length);
        return new Promise((resolve) => acks.push(() => resolve({ offset: 0, shard: 0 })));
      },
      { lingerMs: 1000, maxBatchRecords: 2 },
    );
    const enc = new TextEncoder();
    for (const i of [1, 2, 3, 4, 5]) expect(pub.send(enc.encode(String(i)))).toBe(true);
    expect(sent).toEqual([2, 2]); // full batches go at once; the fifth waits for linger
    let flushed = false;
    const flush = pub.flush().then(() => {
      flushed = true;
    });
    await waitUntil(() => sent.length === 3);
    expect(sent).toEqual([2, 2, 1]); // flush sent the waiting batch
    acks[0]!();
    acks[1]!();
    await Promise.resolve();
    expect(flushed).toBe(false); // one batch still unanswered
    acks[2]!();
    await flush;
    expect(flushed).toBe(true);
    await pub.close();
  });

  it('a_failed_batch_of_sent_records_is_thrown_by_the_next_flush_once', async () => {
    const boom = new Error('append failed');
    let fail = true;
    const pub = new Publisher(
      's',
      async () => {
        if (fail) throw boom;
        return { offset: 0, shard: 0 };
      },
      { lingerMs: 0 },
    );
    pub.send(new Uint8Array(1));
    await expect(pub.flush()).rejects.toBe(boom);
    fail = false;
    pub.send(new Uint8Array(1));
    await expect(pub.flush()).resolves.toBeUndefined(); // reported once, not again
    // A record with its own promise in the same failed batch still gets the error itself.
    fail = true;
    const own = pub.publish(new Uint8Array(1));
    pub.send(new Uint8Array(1));
    await expect(own).rejects.toBe(boom);
    await expect(pub.close()).rejects.toBe(boom);
  });

  it('send_answers_false_at_the_unacked_bound_and_ready_waits_for_acks', async () => {
    const acks: Array<() => void> = [];
    let ackAtOnce = false;
    const pub = new Publisher(
      's',
      () =>
        ackAtOnce
          ? Promise.resolve({ offset: 0, shard: 0 })
          : new Promise((resolve) => acks.push(() => resolve({ offset: 0, shard: 0 }))),
      { lingerMs: 1000, maxBatchRecords: 1024 },
    );
    const one = new Uint8Array(1);
    let answered = true;
    let n = 0;
    while (answered) {
      answered = pub.send(one);
      n++;
    }
    expect(n).toBe(PUBLISHER_UNACKED_RECORDS_HIGH);
    let ready = false;
    const waiting = pub.ready().then(() => {
      ready = true;
    });
    await Promise.resolve();
    expect(ready).toBe(false);
    acks[0]!(); // one batch of 1,024 answered: below the bound again
    await waiting;
    expect(ready).toBe(true);
    // A caller that ignores false is refused at the hard bound, and nothing is queued.
    expect(() => {
      for (let i = 0; i <= PUBLISHER_UNACKED_RECORDS_MAX; i++) pub.send(one);
    }).toThrow(PublisherFullError);
    ackAtOnce = true;
    for (const ack of acks) ack();
    await pub.close();

    // The bytes bound answers false first for large records.
    const big = new Publisher('s', () => new Promise(() => undefined), { lingerMs: 1000 });
    const mib = new Uint8Array(1024 * 1024);
    const answers = Array.from({ length: PUBLISHER_UNACKED_BYTES_HIGH / mib.length }, () =>
      big.send(mib),
    );
    expect(answers.indexOf(false)).toBe(answers.length - 1);
  });

  it('a_frame_stream_reads_frames_split_anywhere_in_pieces_or_joined', async () => {
    const frames = [
      encodeMessage({ type: 'event_stream_hello', subscription_id: 3 }),
      encodeEventBatch({
        baseOffset: 7,
        payloads: [new Uint8Array(40).fill(1), new Uint8Array(0)],
      }),
    ];
    const bytes = new Uint8Array(frames.flatMap((f) => [...f]));
    for (let step = 1; step <= bytes.length; step += 5) {
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += step) chunks.push(bytes.slice(at, at + step));
      const stream = {
        [Symbol.asyncIterator]: async function* () {
          yield* chunks;
        },
      };
      const fs = new FrameStream(stream as never);
      const hello = await fs.next();
      expect(hello!.payload).toEqual(frames[0]!.subarray(12));
      const batch = await fs.nextPieces();
      expect(decodeEventBatchPieces(batch!.flags, batch!.pieces, batch!.length)).toEqual(
        decodeEventBatch(frames[1]![7]!, frames[1]!.subarray(12)),
      );
      expect(await fs.next()).toBeNull();
    }
  });

  it('frames_taken_whole_from_their_chunk_are_the_frames_next_reads', async () => {
    // Several frames per chunk, frames split over chunks, an empty payload and empty chunks.
    const frames = [
      encodeMessage({ type: 'ok' }),
      encodeMessage({ type: 'cache_ok', request_id: 1 }),
      encodeEventBatch({ baseOffset: 7, payloads: [new Uint8Array(40).fill(1)] }),
      encodeMessage({ type: 'cache_ok', request_id: 2 }),
    ];
    const bytes = Uint8Array.from(frames.flatMap((f) => [...f]));
    const want = frames.map((f) => ({ flags: f[7]!, payload: f.subarray(12) }));
    for (let step = 1; step <= bytes.length; step += 3) {
      const chunks: Uint8Array[] = [new Uint8Array(0)];
      for (let at = 0; at < bytes.length; at += step) chunks.push(bytes.slice(at, at + step));
      const stream = {
        [Symbol.asyncIterator]: async function* () {
          yield* chunks;
        },
      };
      const fs = new FrameStream(stream as never);
      const got: Array<{ flags: number; payload: Uint8Array }> = [];
      let whole = 0;
      for (;;) {
        let f = fs.takeWhole();
        if (f !== null) whole++;
        else if (fs.exhausted) {
          if (!(await fs.pull())) break;
          continue;
        } else {
          f = await fs.next();
          if (f === null) break;
        }
        got.push(f);
      }
      const plain = got.map((f) => ({ flags: f.flags, payload: f.payload }));
      expect(plain, `chunks of ${step}`).toEqual(want);
      // In one chunk, every frame is taken whole.
      if (step >= bytes.length) expect(whole).toBe(frames.length);
    }
    // A bad header fails the stream for good, on either path.
    const bad = Uint8Array.from(frames[0]!);
    bad[0] = 0;
    const fs = new FrameStream({
      [Symbol.asyncIterator]: async function* () {
        yield bad;
      },
    } as never);
    expect(await fs.pull()).toBe(true);
    expect(() => fs.takeWhole()).toThrow();
    await expect(fs.next()).rejects.toThrow();
  });

  it('frames_handed_over_as_their_chunks_arrive_are_the_frames_next_reads', async () => {
    // Several frames per chunk, frames split over chunks, empty chunks; the first frame read
    // by next() (as auth does) before the rest are handed over; with and without readChunks.
    const frames = [
      encodeMessage({ type: 'ok' }),
      encodeMessage({ type: 'cache_ok', request_id: 1 }),
      encodeEventBatch({ baseOffset: 7, payloads: [new Uint8Array(40).fill(1)] }),
      encodeMessage({ type: 'cache_ok', request_id: 2 }),
    ];
    const bytes = Uint8Array.from(frames.flatMap((f) => [...f]));
    const want = frames.map((f) => ({ flags: f[7]!, payload: [...f.subarray(12)] }));
    for (const pushed of [true, false]) {
      for (let step = 1; step <= bytes.length; step += 3) {
        const chunks: Uint8Array[] = [new Uint8Array(0)];
        for (let at = 0; at < bytes.length; at += step) chunks.push(bytes.slice(at, at + step));
        let at = 0;
        const stream = {
          // The iterator serves chunks until readChunks takes over.
          [Symbol.asyncIterator]: () => ({
            next: async () =>
              at < chunks.length ? { value: chunks[at++]!, done: false } : { done: true },
          }),
          readChunks: pushed
            ? (sink: (c: Uint8Array) => void, end: (e: Error | null) => void) => {
                queueMicrotask(() => {
                  while (at < chunks.length) sink(chunks[at++]!);
                  end(null);
                });
              }
            : undefined,
        };
        const fs = new FrameStream(stream as never);
        const first = await fs.next();
        const got = [{ flags: first!.flags, payload: [...first!.payload] }];
        const ended = await new Promise<unknown>((resolve) =>
          fs.forEachFrame((f) => got.push({ flags: f.flags, payload: [...f.payload] }), resolve),
        );
        expect(ended).toBeNull();
        expect(got, `chunks of ${step}, readChunks ${pushed}`).toEqual(want);
      }
    }
    // A bad header ends the reading with the decoder's error.
    const bad = Uint8Array.from(frames[0]!);
    bad[0] = 0;
    const fs = new FrameStream({
      readChunks: (sink: (c: Uint8Array) => void) => sink(bad),
    } as never);
    const seen: unknown[] = [];
    fs.forEachFrame(
      () => seen.push('frame'),
      (err) => seen.push(err),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(Error);
  });

  it('broker_answers_map_to_typed_errors_with_their_retry_class', () => {
    const e = brokerErrorFor({ brokerCode: 'not_found', message: 'no stream' });
    expect(e.code).toBe('FELIX_CLIENT_NOT_FOUND');
    expect(e.retry).toBe('retry_after_backoff');
    expect(brokerErrorFor({ brokerCode: 'storage', message: 'x', retry: 4 }).retry).toBe(
      'unknown_outcome',
    );
    // An unknown code keeps its name and obeys the class; an unknown class is fatal.
    const u = brokerErrorFor({ brokerCode: 'code_99', message: 'x', retry: 'weird' });
    expect(u.brokerCode).toBe('code_99');
    expect(u.retry).toBe('never');
  });

  it('every_code_the_wire_names_maps_to_its_own_typed_error_not_the_unknown_one', () => {
    for (const { name, retry } of ERROR_CODES) {
      const e = brokerErrorFor({ brokerCode: name, message: 'x', retry });
      expect(e.code, name).not.toBe('FELIX_CLIENT_BROKER_UNKNOWN_CODE');
      expect(e.brokerCode).toBe(name);
    }
    const q = brokerErrorFor({ brokerCode: 'quorum_timeout', message: 'no majority', retry: 4 });
    expect(q.code).toBe('FELIX_CLIENT_QUORUM_TIMEOUT');
    expect(q.retry).toBe('unknown_outcome');
  });
});
