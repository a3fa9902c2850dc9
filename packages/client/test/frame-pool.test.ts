// Goal: over a stream that copies what it writes (QUIC), a publish frame is encoded into the
// buffer of a frame whose write has settled, never into one a write still holds; over one that
// may hold a frame after its write resolved (TLS) every frame has its own buffer. The buffers
// were the pub→sub client's largest off-heap allocation after the read copies (docs/perf.md,
// "QUIC pub→sub (session 20)").
// Method: a PublishPipe over a fake transport stream whose writes settle when the test says,
// copying the frame's bytes at that moment, as quiche does by then.
import { FLAG_BINARY_PUBLISH_ACKED, FrameDecoder, decodePublishBatch } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FRAME_POOL_FRAME_BYTES_MIN } from '../src/limits.js';
import { framePool } from '../src/protocol/frame-pool.js';
import { FrameStream } from '../src/protocol/frame-stream.js';
import { PublishPipe } from '../src/protocol/publish-pipe.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { StreamWriter } from '../src/protocol/stream-writer.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';

/** A transport stream stand-in whose writes settle on `settle()`, copying the bytes then. */
class HeldStream {
  readonly frames: Uint8Array[] = [];
  readonly copies: Uint8Array[] = [];
  private pending: Array<() => void> = [];
  constructor(readonly copiesWrites: boolean) {}
  write(b: Uint8Array): Promise<void> {
    this.frames.push(b);
    return new Promise((resolve) => {
      this.pending.push(() => {
        this.copies.push(b.slice());
        resolve();
      });
    });
  }
  settle(): void {
    for (const s of this.pending.splice(0)) s();
  }
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return { next: () => new Promise(() => undefined) };
  }
}

function pipeOver(stream: HeldStream): { pipe: PublishPipe; writer: StreamWriter } {
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
  return { pipe, writer };
}

/** Publishes one unacked batch of four 64 KiB records filled with `fill`, written at turn end. */
function publish(pipe: PublishPipe, fill: number): Promise<unknown> {
  const payloads = Array.from({ length: 4 }, () => new Uint8Array(64 * 1024).fill(fill));
  return pipe.publish('orders', payloads, { ack: false, timeoutMs: 60_000 });
}

/** The first record's first byte of every frame, decoded from what the stream copied. */
function fills(copies: Uint8Array[]): number[] {
  const d = new FrameDecoder();
  return copies
    .flatMap((c) => d.push(c))
    .map((f) => decodePublishBatch(f.flags, f.payload).payloads[0]![0]!);
}

/**
 * Takes every free buffer out of the pool (and keeps them): the pool is the process's, and
 * buffers given back by other tests' connections in this process would serve a frame first.
 */
function emptyThePool(): void {
  for (;;) {
    const before = framePool.allocated;
    framePool.take(FRAME_POOL_FRAME_BYTES_MIN);
    if (framePool.allocated !== before) return;
  }
}

describe('frame pool', () => {
  it('a_publish_frame_reuses_the_buffer_of_a_frame_whose_write_settled_and_no_other', async () => {
    emptyThePool();
    const stream = new HeldStream(true);
    const { pipe, writer } = pipeOver(stream);
    const allocated = writer.pool?.allocated ?? 0;
    const a = publish(pipe, 1);
    await new Promise(setImmediate); // the turn ends: a's frame is written, its write held
    const b = publish(pipe, 2);
    await new Promise(setImmediate);
    // a's write has not settled: b may not take its buffer.
    expect(stream.frames[1]!.buffer).not.toBe(stream.frames[0]!.buffer);
    stream.settle();
    await Promise.all([a, b]);
    const c = publish(pipe, 3);
    await new Promise(setImmediate);
    stream.settle();
    await c;
    const reused = [stream.frames[0]!.buffer, stream.frames[1]!.buffer];
    expect(reused).toContain(stream.frames[2]!.buffer);
    expect((writer.pool?.allocated ?? 0) - allocated).toBeLessThanOrEqual(2);
    // Every frame was whole when the stream copied it.
    expect(fills(stream.copies)).toEqual([1, 2, 3]);
  });

  it('a_stream_that_may_hold_a_written_frame_gets_a_new_buffer_for_every_frame', async () => {
    const stream = new HeldStream(false);
    const { pipe, writer } = pipeOver(stream);
    expect(writer.pool).toBeNull();
    for (let i = 1; i <= 3; i++) {
      const p = publish(pipe, i);
      await new Promise(setImmediate);
      stream.settle();
      await p;
    }
    expect(new Set(stream.frames.map((f) => f.buffer)).size).toBe(3);
    expect(fills(stream.copies)).toEqual([1, 2, 3]);
  });
});
