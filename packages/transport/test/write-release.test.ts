/**
 * Goal: a write's `released` signal means the transport holds no reference to the chunk any
 * more, so a caller may reuse the buffer from then on (the client's frame arenas do). Method:
 * over a real loopback pair of each kind, the client writes chunks larger than the stream
 * window (so some wait for credit and leave in pieces) and the moment `released` runs it
 * overwrites the chunk; the server must still read the original bytes, every chunk must be
 * released, and a chunk written on a reset stream must not be.
 */
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import type { TransportKind } from '../src/index.js';
import { connectPair, nextStream, readAll } from './helpers.js';

const transports: TransportKind[] = ['tls', 'quic'];
const MIB = 1024 * 1024;

describe('write release', () => {
  it('a_written_chunk_is_released_only_once_the_transport_is_done_with_it', async () => {
    for (const transport of transports) await releasedOnlyWhenDone(transport);
  });

  it('a_chunk_still_queued_when_its_stream_is_reset_is_never_released', async () => {
    for (const transport of transports) await neverReleasedOnReset(transport);
  });
});

async function releasedOnlyWhenDone(transport: TransportKind): Promise<void> {
  const p = await connectPair(transport);
  try {
    const received = (async () => readAll(await nextStream(p.server)))();
    const c = await p.client.openBidi();
    const sizes = [3 * MIB + 17, 100, 2 * MIB, 5, MIB + 1];
    const chunks = sizes.map((n, i) => new Uint8Array(n).fill(i + 1));
    let released = 0;
    const writes = chunks.map((chunk) =>
      c.write(chunk, () => {
        chunk.fill(0xee); // a reuse: had the transport still held it, the peer reads 0xee
        released++;
      }),
    );
    await Promise.all(writes);
    await c.end();
    const got = await received;
    expect(got.byteLength).toBe(sizes.reduce((a, b) => a + b, 0));
    let at = 0;
    sizes.forEach((n, i) => {
      const part = got.subarray(at, at + n);
      expect(part.every((b) => b === i + 1)).toBe(true);
      at += n;
    });
    await waitFor(() => released === chunks.length, 'every chunk is released', 5_000);
  } finally {
    await p.cleanup();
  }
}

async function neverReleasedOnReset(transport: TransportKind): Promise<void> {
  const p = await connectPair(transport);
  try {
    const c = await p.client.openBidi();
    // Larger than the peer's window and nobody reads: most of it cannot leave.
    let released = false;
    const w = c.write(new Uint8Array(8 * MIB), () => {
      released = true;
    });
    c.reset(7);
    // Rejected by the reset (or resolved, had it all left): either way it must not release.
    await w.then(
      () => undefined,
      () => undefined,
    );
    await c.closed;
    expect(released).toBe(false);
  } finally {
    await p.cleanup();
  }
}
