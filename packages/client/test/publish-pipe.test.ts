// Goal: one connection has one write path per stream and one correlation table: publishes to one
// stream and key leave in call order whether acked or not, unacked ones of one turn in one frame
// (within the coalesce bound), frames of one turn leave in one write, and a lost connection
// fails every request of its table (acked publishes as unknown outcomes).
// Method: a PublishPipe over a fake transport stream that records every write; the frames are
// decoded with @felix/wire's FrameDecoder; waiting is by waitFor on what the fake saw.
import { waitFor } from '@felix/testing-harness';
import { FLAG_BINARY_PUBLISH_ACKED, FrameDecoder, decodePublishBatch } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { ConnectionLostError, OutcomeUnknownError } from '../src/errors.js';
import { PUBLISH_COALESCE_RECORDS_MAX } from '../src/limits.js';
import { FrameStream } from '../src/protocol/frame-stream.js';
import { PublishPipe } from '../src/protocol/publish-pipe.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { StreamWriter } from '../src/protocol/stream-writer.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';

/** A transport stream stand-in that records writes and never answers. */
class FakeStream {
  readonly writes: Uint8Array[] = [];
  async write(b: Uint8Array): Promise<void> {
    this.writes.push(b);
  }
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return { next: () => new Promise(() => undefined) };
  }
}

function rig() {
  const stream = new FakeStream();
  const table = new RequestTable();
  const turn = new TurnBatcher();
  const writer = new StreamWriter(stream as never, turn, () => undefined);
  const pipe = new PublishPipe({
    server: 'fake',
    tenant: 't1',
    namespace: 'default',
    frames: new FrameStream(stream as never),
    negotiated: { flags: FLAG_BINARY_PUBLISH_ACKED, features: 0, featuresHi: 0, window: 16 },
    table,
    writer,
    turn,
  });
  const frames = () => {
    const d = new FrameDecoder();
    return stream.writes.flatMap((w) => d.push(w));
  };
  return { stream, table, pipe, frames };
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('publish pipe', () => {
  it('acked_and_unacked_publishes_to_one_key_keep_call_order', async () => {
    const { stream, pipe, frames } = rig();
    const key = bytes('k');
    const call = (s: string, ack: boolean) =>
      pipe.publish('orders', [bytes(s)], { key, ack, gather: true, timeoutMs: 60_000 });
    const answers = [call('a1', true), call('a2', true), call('u3', false), call('a4', true)];
    for (const a of answers) a.catch(() => undefined); // acked ones are never answered here
    await waitFor(() => frames().length === 3, 'three frames are written', 5_000);
    const sent = frames().map((f) => decodePublishBatch(f.flags, f.payload));
    expect(sent.map((b) => b.payloads.map(text))).toEqual([['a1', 'a2'], ['u3'], ['a4']]);
    expect(sent.map((b) => b.requestId !== undefined)).toEqual([true, false, true]);
    // The turn's frames left in one write, and the unacked publish resolved once written.
    expect(stream.writes).toHaveLength(1);
    expect(await answers[2]).toEqual({ offset: undefined });
  });

  it('unacknowledged_publishes_made_in_one_turn_travel_as_one_frame', async () => {
    const { stream, pipe, frames } = rig();
    const n = 100;
    const call = (i: number) =>
      pipe.publish('orders', [bytes(`u${i}`)], { ack: false, gather: true, timeoutMs: 60_000 });
    const answers = Array.from({ length: n }, (_, i) => call(i));
    // Every caller of the frame shares its one promise, settled once the frame is written.
    expect(new Set(answers).size).toBe(1);
    expect(await Promise.all(answers)).toEqual(Array(n).fill({ offset: undefined }));
    const sent = frames().map((f) => decodePublishBatch(f.flags, f.payload));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.requestId).toBeUndefined();
    expect(sent[0]!.payloads.map(text)).toEqual(Array.from({ length: n }, (_, i) => `u${i}`));
    expect(stream.writes).toHaveLength(1);
  });

  it('a_buffer_reused_after_publish_returns_does_not_change_what_was_published', async () => {
    const { pipe, frames } = rig();
    const buf = bytes('a1');
    const calls: Promise<unknown>[] = [];
    for (const ack of [false, true]) {
      for (const s of ['a1', 'b2', 'c3']) {
        buf.set(bytes(s)); // the caller reuses its buffer once publish() returned
        calls.push(pipe.publish('orders', [buf], { ack, gather: true, timeoutMs: 60_000 }));
      }
    }
    buf.set(bytes('zz'));
    for (const c of calls) c.catch(() => undefined); // acked ones are never answered here
    await waitFor(() => frames().length === 2, 'both frames are written', 5_000);
    const sent = frames().map((f) => decodePublishBatch(f.flags, f.payload).payloads.map(text));
    expect(sent).toEqual([
      ['a1', 'b2', 'c3'],
      ['a1', 'b2', 'c3'],
    ]);
  });

  it('unacknowledged_publishes_past_the_coalesce_bound_start_a_new_frame', async () => {
    const { pipe, frames } = rig();
    const n = PUBLISH_COALESCE_RECORDS_MAX + 1;
    const answers = Array.from({ length: n }, (_, i) =>
      pipe.publish('orders', [bytes(`u${i}`)], { ack: false, gather: true, timeoutMs: 60_000 }),
    );
    await Promise.all(answers);
    const sent = frames().map((f) => decodePublishBatch(f.flags, f.payload));
    expect(sent.map((b) => b.payloads.length)).toEqual([PUBLISH_COALESCE_RECORDS_MAX, 1]);
    expect(sent[1]!.payloads.map(text)).toEqual([`u${n - 1}`]);
  });

  it('acked_callers_of_one_frame_get_consecutive_offsets_each_in_its_own_shape', async () => {
    const { table, pipe, frames } = rig();
    const call = (records: string[], shape?: (o: number | undefined) => { offset: number }) =>
      pipe.publish('orders', records.map(bytes), {
        ...{ ack: true, gather: true, timeoutMs: 60_000 },
        ...(shape !== undefined ? { shape } : {}),
      });
    const tagged = (o: number | undefined) => ({ offset: o!, shard: 7 });
    const answers = [call(['a']), call(['b1', 'b2'], tagged), call(['c'])];
    await waitFor(() => frames().length === 1, 'one frame is written', 5_000);
    const [frame] = frames().map((f) => decodePublishBatch(f.flags, f.payload));
    expect(frame!.payloads.map(text)).toEqual(['a', 'b1', 'b2', 'c']);
    table.take(frame!.requestId!)!.resolve({ offset: 100 });
    expect(await Promise.all(answers)).toEqual([
      { offset: 100 },
      { offset: 101, shard: 7 },
      { offset: 103 },
    ]);
  });

  it('a_lost_connection_fails_every_request_of_its_table_and_acked_publishes_as_unknown_outcomes', async () => {
    const { table, pipe, frames } = rig();
    const acked = pipe.publish('orders', [bytes('x')], { ack: true, timeoutMs: 60_000 });
    const shards = pipe.streamShards('orders');
    await waitFor(() => frames().length === 2, 'both requests are written', 5_000);
    const lost = new ConnectionLostError('fake');
    table.failAll(lost);
    await expect(acked).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(shards).rejects.toBe(lost);
  });
});
