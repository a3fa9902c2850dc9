/**
 * Goal: a QUIC sender cuts its datagrams from one send slab for as long as the kernel takes each
 * datagram in the call, instead of allocating a new 256 KiB slab every dozen datagrams (vendor
 * patch 21). Every slab was external memory that V8 counts towards its next mark-compact, which
 * is why a pub→sub client process collected several times a second (docs/perf.md, "QUIC pub→sub
 * (session 19)"). A datagram the socket could not take at once (libuv queues it) still holds
 * its region until the next slab. Method: a bulk stream between two connections in this
 * process, counting the slab-sized allocations and checking every byte that arrives.
 */
import dgram from 'node:dgram';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectPair, nextStream, type Pair } from './helpers.js';

const CHUNK_BYTES = 64 * 1024;
const TOTAL_BYTES = 8 * 1024 * 1024;
/** The library's slab: at least 256 KiB (four loopback datagrams of 65,507 B: 262,028 B). */
const SLAB_BYTES_MIN = 256 * 1024;
/** A datagram on an established connection carries at most about 16 KB (quiche's limit). */
const DATAGRAM_BYTES_MAX = 16 * 1024;

/** Counts the slab-sized Buffer.allocUnsafe calls while `run` runs. */
async function countingSlabs(run: () => Promise<void>): Promise<number> {
  let slabs = 0;
  const B = Buffer as unknown as { allocUnsafe: (size: number) => Buffer };
  const orig = B.allocUnsafe;
  B.allocUnsafe = (size: number) => {
    if (size >= SLAB_BYTES_MIN) slabs++;
    return orig(size);
  };
  try {
    await run();
  } finally {
    B.allocUnsafe = orig;
  }
  return slabs;
}

/** The byte at `offset` of the bulk stream: a pattern a reused region could not fake. */
const patternAt = (offset: number): number => (offset * 7 + (offset >>> 16)) & 0xff;

describe('quic send slab', () => {
  let p: Pair;
  beforeEach(async () => {
    p = await connectPair('quic');
  });
  afterEach(async () => {
    await p.cleanup();
  });

  /** Sends TOTAL_BYTES on one stream; resolves with the bytes that arrived out of place. */
  async function bulk(): Promise<{ read: number; wrong: number }> {
    const s = await p.client.openBidi();
    let read = 0;
    let wrong = 0;
    const reader = nextStream(p.server).then(async (r) => {
      for await (const chunk of r) {
        for (let i = 0; i < chunk.length; i++) if (chunk[i] !== patternAt(read + i)) wrong++;
        read += chunk.length;
      }
    });
    for (let at = 0; at < TOTAL_BYTES; at += CHUNK_BYTES) {
      const chunk = new Uint8Array(CHUNK_BYTES);
      for (let i = 0; i < CHUNK_BYTES; i++) chunk[i] = patternAt(at + i);
      await s.write(chunk);
    }
    await s.end();
    await reader;
    return { read, wrong };
  }

  it('a_quic_bulk_stream_cuts_its_datagrams_from_one_send_slab', async () => {
    let got = { read: 0, wrong: -1 };
    const slabs = await countingSlabs(async () => {
      got = await bulk();
    });
    expect(got).toEqual({ read: TOTAL_BYTES, wrong: 0 });
    // Each socket already has its slab from the handshake; a spare one each. Moving on through
    // the slab instead needs one per (262,028 - 65,507) B sent: 40 or more for 8 MiB.
    expect(slabs).toBeLessThanOrEqual(2);
  }, 60_000);

  it('a_quic_flush_leaves_a_datagram_the_socket_still_queues_untouched', async () => {
    // As if libuv held every datagram for later (the socket buffer full): no region may be
    // written again until the next slab, so the sender moves on through its slabs.
    const proto = dgram.Socket.prototype as unknown as { getSendQueueCount: () => number };
    const orig = proto.getSendQueueCount;
    proto.getSendQueueCount = () => 1;
    let got = { read: 0, wrong: -1 };
    let slabs: number;
    try {
      slabs = await countingSlabs(async () => {
        got = await bulk();
      });
    } finally {
      proto.getSendQueueCount = orig;
    }
    expect(got).toEqual({ read: TOTAL_BYTES, wrong: 0 });
    const perSlabBytes = SLAB_BYTES_MIN - 65_507 + DATAGRAM_BYTES_MAX;
    expect(slabs).toBeGreaterThanOrEqual(Math.floor(TOTAL_BYTES / perSlabBytes));
  }, 60_000);
});
