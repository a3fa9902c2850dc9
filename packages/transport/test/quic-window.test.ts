/**
 * Goal: a QUIC stream buffers at most its configured window ahead of its reader
 * (`QUIC_STREAM_WINDOW_BYTES`, as the TLS multiplexer's stream window), however fast the reader
 * has been reading. quiche grows a stream's window while the reader keeps up, up to a ceiling
 * the library never passed on (quiche's own default, 16 MiB), so a bulk stream on loopback could
 * have many MiB in flight: more than the receiving UDP socket buffer holds while that process
 * waits for a core, and the overflow was lost and sent again (docs/perf.md, "QUIC (session 18)").
 * Method: a writer in this process writes as fast as quiche takes its chunks while the peer
 * reads them all; quiche takes a chunk only within the credit the reader granted, so the most
 * written and not yet read at any moment is the window in use.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QUIC_STREAM_WINDOW_BYTES } from '../src/limits.js';
import { connectPair, nextStream, type Pair } from './helpers.js';

const CHUNK_BYTES = 64 * 1024;
const TOTAL_BYTES = 48 * 1024 * 1024;
/** The reader's one chunk read ahead (the direct reader's) and the chunk being written. */
const SLACK_BYTES = 4 * CHUNK_BYTES;

describe('quic stream window', () => {
  let p: Pair;
  beforeEach(async () => {
    p = await connectPair('quic');
  });
  afterEach(async () => {
    await p.cleanup();
  });

  it('a_quic_stream_buffers_at_most_its_window_ahead_of_a_fast_reader', async () => {
    const s = await p.client.openBidi();
    let read = 0;
    const reader = nextStream(p.server).then(async (r) => {
      for await (const chunk of r) read += chunk.length;
    });
    const chunk = new Uint8Array(CHUNK_BYTES).fill(7);
    let written = 0;
    let aheadMax = 0;
    while (written < TOTAL_BYTES) {
      await s.write(chunk);
      written += chunk.length;
      aheadMax = Math.max(aheadMax, written - read);
    }
    await s.end();
    await reader;
    expect(read).toBe(TOTAL_BYTES);
    expect(aheadMax).toBeLessThanOrEqual(QUIC_STREAM_WINDOW_BYTES + SLACK_BYTES);
  }, 60_000);
});
