// Goal: what one event-loop turn may hold before it is written is bounded in bytes, not only in
// frames or records: a loop that publishes many large records in one turn has its frames
// written while the turn goes on (in call order, nothing lost), so the client never holds more
// than TURN_WRITE_BYTES_MAX (plus one frame) for the turn's end.
// Method: a StreamWriter and a PublishPipe over a fake transport stream that records writes;
// what was written is looked at synchronously, inside the turn, then decoded once it ended.
import { waitFor } from '@felix/testing-harness';
import { FLAG_BINARY_PUBLISH_ACKED, FrameDecoder, decodePublishBatch } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { TURN_WRITE_BYTES_MAX } from '../src/limits.js';
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

const MIB = 1024 * 1024;
const written = (s: FakeStream) => s.writes.reduce((n, w) => n + w.byteLength, 0);

describe('per-turn byte bound', () => {
  it('a_turn_holds_at_most_its_byte_bound_of_frames_before_writing_them', async () => {
    const stream = new FakeStream();
    const writer = new StreamWriter(stream as never, new TurnBatcher(), () => undefined);
    const frames = Array.from({ length: 20 }, (_, i) => new Uint8Array(MIB).fill(i));
    let held = 0;
    for (const f of frames) {
      writer.push(f);
      held = Math.max(held, writer.heldBytes);
    }
    // Still inside the turn: most of it is already written, the rest is within the bound.
    expect(held).toBeLessThanOrEqual(TURN_WRITE_BYTES_MAX + MIB);
    expect(written(stream)).toBeGreaterThanOrEqual(20 * MIB - TURN_WRITE_BYTES_MAX - MIB);
    await waitFor(() => written(stream) === 20 * MIB, 'the rest at the turn end', 5_000);
    const order = stream.writes.flatMap((w) => {
      const firsts: number[] = [];
      for (let at = 0; at < w.byteLength; at += MIB) firsts.push(w[at]!);
      return firsts;
    });
    expect(order).toEqual(frames.map((_, i) => i));
  });

  it('unacknowledged_publishes_of_one_turn_past_its_byte_bound_go_before_the_turn_ends', async () => {
    const stream = new FakeStream();
    const turn = new TurnBatcher();
    const writer = new StreamWriter(stream as never, turn, () => undefined);
    const pipe = new PublishPipe({
      server: 'fake',
      tenant: 't1',
      namespace: 'default',
      frames: new FrameStream(stream as never),
      negotiated: { flags: FLAG_BINARY_PUBLISH_ACKED, features: 0, featuresHi: 0, window: 16 },
      table: new RequestTable(),
      writer,
      turn,
    });
    const records = 256; // 64 KiB each to its own key: no gather reaches its own bound
    const answers = Array.from({ length: records }, (_, i) =>
      pipe.publish('orders', [new Uint8Array(64 * 1024).fill(i % 251)], {
        key: new TextEncoder().encode(`k${i}`),
        ack: false,
        gather: true,
        timeoutMs: 60_000,
      }),
    );
    // 16 MiB published in one turn: written as it goes, never all held for the turn's end.
    expect(written(stream)).toBeGreaterThan(0);
    expect(writer.heldBytes).toBeLessThanOrEqual(TURN_WRITE_BYTES_MAX + MIB);
    await Promise.all(answers);
    const d = new FrameDecoder();
    const sent = stream.writes
      .flatMap((w) => d.push(w))
      .map((f) => decodePublishBatch(f.flags, f.payload));
    expect(sent.map((b) => new TextDecoder().decode(b.key))).toEqual(
      Array.from({ length: records }, (_, i) => `k${i}`),
    );
    expect(sent.map((b) => b.payloads[0]![0])).toEqual(
      Array.from({ length: records }, (_, i) => i % 251),
    );
  });
});
