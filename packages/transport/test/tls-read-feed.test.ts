/**
 * Goal: TLS reads reach the multiplexer through our own read hook (no Readable machinery), and
 * every view handed on stays intact however later reads reuse or replace the read region.
 * Method: varied write sizes (small reads are copied out, large ones handed on as their region)
 * with every received chunk kept uncopied until the end; a raw node:tls server whose socket has
 * bytes buffered before the hook goes in; the early-read buffer on its own.
 */
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import { waitFor, withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../src/errors.js';
import {
  TLS_EARLY_READ_BYTES_MAX,
  TLS_READ_HANDOFF_BYTES_MIN,
  TLS_READ_REGION_BYTES,
} from '../src/limits.js';
import { ReadFeed, feedAcceptedSocket } from '../src/tls/read-feed.js';
import { connectPair, devMaterial, nextStream } from './helpers.js';

/** Deterministic bytes (xorshift), so a corrupted chunk cannot match by chance. */
function pattern(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Where two byte strings first differ (-1: equal), so a failure does not diff 400 KB in full. */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

const join = (parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

/** Sizes on both sides of the hand-off bound, and several reads' worth. */
const SIZES = [
  1,
  7,
  100,
  1500,
  TLS_READ_HANDOFF_BYTES_MIN - 1,
  TLS_READ_HANDOFF_BYTES_MIN,
  9000,
  16384,
  70_000,
];

describe('tls read feed', () => {
  it('every_chunk_a_reader_keeps_stays_intact_over_small_and_large_reads', async () => {
    const pair = await connectPair('tls');
    try {
      const sent: Uint8Array[] = [];
      const up = await pair.client.openBidi();
      const serverSide = nextStream(pair.server);
      let seed = 1;
      for (let round = 0; round < 3; round++) {
        for (const n of SIZES) {
          const bytes = pattern(n, seed++);
          sent.push(bytes);
          // Awaiting some writes and not others gives reads of many sizes, merged and not.
          if (seed % 2 === 0) await up.write(bytes);
          else void up.write(bytes);
        }
      }
      const down = await serverSide;
      const keptUp: Uint8Array[] = [];
      const reading = (async () => {
        for await (const c of down) {
          keptUp.push(c);
          // Echo each chunk as it is: the same views go back, now read on the dialing side.
          await down.write(c);
        }
        await down.end();
      })();
      await up.end();
      const keptDown: Uint8Array[] = [];
      // A corrupted view shows as a bad frame, or as a frame length that never completes.
      await withDeadline(
        (async () => {
          for await (const c of up) keptDown.push(c);
          await reading;
        })(),
        20_000,
        'the echo of every chunk',
      );
      const expected = join(sent);
      expect(firstDifference(join(keptUp), expected)).toBe(-1);
      expect(firstDifference(join(keptDown), expected)).toBe(-1);
    } finally {
      await pair.cleanup();
    }
  });

  it('an_accepted_socket_with_bytes_already_buffered_keeps_their_order_under_the_hook', async () => {
    const m = await devMaterial();
    const got: Uint8Array[] = [];
    let hooked: boolean | null = null;
    const server = createTlsServer({ cert: m.certPem, key: m.keyPem }, (socket) => {
      // Let the first bytes land in the socket's own buffer before the hook goes in.
      void waitFor(() => socket.readableLength >= 1000, 'bytes buffered in the socket', 5000).then(
        () => {
          const feed = new ReadFeed();
          hooked = feedAcceptedSocket(socket, feed);
          feed.attach((c) => got.push(c));
          socket.write('go');
        },
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const first = pattern(1000, 3);
    const second = pattern(50_000, 4);
    const client = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    try {
      await new Promise<void>((r) => client.once('secureConnect', () => r()));
      client.write(first);
      await new Promise<void>((r) => client.once('data', () => r()));
      client.write(second);
      await waitFor(
        () => got.reduce((n, c) => n + c.length, 0) >= 51_000,
        'the bytes to arrive',
        5000,
      );
      expect(hooked).toBe(true);
      expect(firstDifference(join(got), join([first, second]))).toBe(-1);
    } finally {
      client.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('reads_before_the_multiplexer_attaches_come_first_and_too_many_are_refused', () => {
    const feed = new ReadFeed();
    feed.push(Uint8Array.of(1));
    feed.push(Uint8Array.of(2));
    const got: number[] = [];
    feed.attach((c) => got.push(...c));
    feed.push(Uint8Array.of(3));
    expect(got).toEqual([1, 2, 3]);

    const flooded = new ReadFeed();
    flooded.push(new Uint8Array(TLS_EARLY_READ_BYTES_MAX));
    flooded.push(new Uint8Array(1));
    expect(() => flooded.attach(() => {})).toThrow(ProtocolError);
  });

  it('a_kept_read_pins_memory_of_its_own_at_most_twice_its_size', () => {
    const feed = new ReadFeed();
    const got: Uint8Array[] = [];
    feed.attach((c) => got.push(c));
    const read = (n: number) => {
      const region = feed.nextRegion();
      region.fill(n & 0xff, 0, n);
      feed.onread.callback(n, region);
      return region;
    };
    const small = read(100);
    const again = read(TLS_READ_HANDOFF_BYTES_MIN - 1);
    const large = read(TLS_READ_HANDOFF_BYTES_MIN);
    const after = feed.nextRegion();
    // Small reads: copies in buffers of exactly their size; the region is used again.
    expect(got[0]!.buffer.byteLength).toBe(100);
    expect(got[1]!.buffer.byteLength).toBe(TLS_READ_HANDOFF_BYTES_MIN - 1);
    expect(again).toBe(small);
    // A large read: its region itself (at most twice its size), and the next read gets another.
    expect(got[2]!.buffer).toBe(large.buffer);
    expect(large.byteLength).toBe(TLS_READ_REGION_BYTES);
    expect(TLS_READ_REGION_BYTES).toBeLessThanOrEqual(2 * TLS_READ_HANDOFF_BYTES_MIN);
    expect(after.buffer).not.toBe(large.buffer);
    expect([...got[0]!.subarray(0, 3)]).toEqual([100, 100, 100]);
  });
});
