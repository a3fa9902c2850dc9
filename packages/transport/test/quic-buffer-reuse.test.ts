/**
 * Goal: a QUIC stream allocates no off-heap buffer of its own per chunk read, and lets a writer
 * reuse a chunk once its write settles. Off-heap bytes are what V8 counts towards its next
 * mark-compact, and a pub→sub client allocated one copy of every received byte out of the
 * library's shared read scratch (docs/perf.md, "QUIC pub→sub (session 20)"). A read now lands in
 * the datagram that brought it (vendor patch 22), whose buffer nothing else reads again: the
 * chunks a reader keeps must stay intact while later datagrams arrive. Method: a bulk stream
 * between two connections in this process; the reader keeps every chunk and checks them only
 * at the end, and the copies made by the read path are counted.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectPair, nextStream, type Pair } from './helpers.js';

const CHUNK_BYTES = 64 * 1024;
const TOTAL_BYTES = 8 * 1024 * 1024;
/** Larger than the stream window (1 MiB): quiche takes such a write in several pieces. */
const BIG_WRITE_BYTES = 3 * 1024 * 1024;

/** The byte at `offset` of the bulk stream: a pattern a reused region could not fake. */
const patternAt = (offset: number): number => (offset * 7 + (offset >>> 16)) & 0xff;

function fillPattern(chunk: Uint8Array, from: number): void {
  for (let i = 0; i < chunk.length; i++) chunk[i] = patternAt(from + i);
}

/** Bytes of `chunks`, read in order from offset 0, that differ from the pattern. */
function wrongBytes(chunks: Uint8Array[]): number {
  let at = 0;
  let wrong = 0;
  for (const c of chunks) {
    for (let i = 0; i < c.length; i++) if (c[i] !== patternAt(at + i)) wrong++;
    at += c.length;
  }
  return wrong;
}

/** Counts Buffer.from calls given bytes (a copy) while `run` runs. */
async function countingCopies(run: () => Promise<void>): Promise<number> {
  let copies = 0;
  const B = Buffer as unknown as { from: (...a: unknown[]) => Buffer };
  const orig = B.from;
  B.from = (...a: unknown[]) => {
    if (a[0] instanceof Uint8Array) copies++;
    return orig.apply(Buffer, a);
  };
  try {
    await run();
  } finally {
    B.from = orig;
  }
  return copies;
}

describe('quic buffer reuse', () => {
  let p: Pair;
  beforeEach(async () => {
    p = await connectPair('quic');
  });
  afterEach(async () => {
    await p.cleanup();
  });

  it('a_quic_stream_keeps_the_bytes_it_reads_in_the_datagram_that_brought_them', async () => {
    const s = await p.client.openBidi();
    const chunks: Uint8Array[] = [];
    const copies = await countingCopies(async () => {
      const reader = nextStream(p.server).then(async (r) => {
        for await (const chunk of r) chunks.push(chunk);
      });
      for (let at = 0; at < TOTAL_BYTES; at += CHUNK_BYTES) {
        const chunk = new Uint8Array(CHUNK_BYTES);
        fillPattern(chunk, at);
        await s.write(chunk);
      }
      await s.end();
      await reader;
    });
    // Checked only now, after every later datagram arrived: no chunk was overwritten.
    expect(chunks.reduce((n, c) => n + c.length, 0)).toBe(TOTAL_BYTES);
    expect(wrongBytes(chunks)).toBe(0);
    // A copy is left only for a read past the datagram's own bytes (the reader fell behind) or
    // one filling less than half of it; before the patch every chunk was one.
    expect(copies).toBeLessThan(chunks.length / 4);
    // What a kept chunk holds on to: at most twice its bytes (or a slab of Node's pool).
    for (const c of chunks)
      expect(c.buffer.byteLength).toBeLessThanOrEqual(Math.max(2 * c.length, Buffer.poolSize));
  }, 60_000);

  it('a_quic_write_has_copied_its_chunk_once_it_settles', async () => {
    const s = await p.client.openBidi();
    expect(s.copiesWrites).toBe(true);
    const chunks: Uint8Array[] = [];
    const reader = nextStream(p.server).then(async (r) => {
      for await (const chunk of r) chunks.push(chunk);
    });
    // One buffer for every write, rewritten as soon as the last write settled (quiche takes
    // each in pieces as the reader grants credit, so most writes wait).
    const reused = new Uint8Array(BIG_WRITE_BYTES);
    for (let at = 0; at < TOTAL_BYTES; at += BIG_WRITE_BYTES) {
      const n = Math.min(BIG_WRITE_BYTES, TOTAL_BYTES - at);
      const chunk = reused.subarray(0, n);
      fillPattern(chunk, at);
      await s.write(chunk);
      reused.fill(0xff);
    }
    await s.end();
    await reader;
    expect(chunks.reduce((n, c) => n + c.length, 0)).toBe(TOTAL_BYTES);
    expect(wrongBytes(chunks)).toBe(0);
  }, 60_000);
});
