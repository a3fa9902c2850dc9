/**
 * Goal: a stream's end (a zero-length FIN written after its data) always reaches the peer over
 * QUIC. quiche 0.18 counts a send side complete once its data is acked and its final size is
 * known, sent or not (cloudflare/quiche#2525), and collects the stream on the ACK that completes
 * it: an ACK processed between the FIN being written and the connection's next flush drops the
 * FIN, and the peer's read waits for ever. Method: hold the datagrams the server receives while
 * the client acks the data, end the stream, then hand the held ACK to the server before the
 * flush the end scheduled can run.
 */
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { connectPair, dec, enc, nextStream } from './helpers.js';

/** The library connection behind the adapter (its `recv` is what the UDP socket calls). */
interface LibConnection {
  recv(data: Uint8Array, remoteInfo: unknown): Promise<void>;
}

describe('quic stream end', () => {
  it('a_fin_reaches_the_peer_when_the_ack_of_the_data_lands_before_the_flush', async () => {
    const p = await connectPair('quic');
    try {
      const lib = (p.server as unknown as { conn: LibConnection }).conn;
      const recv = lib.recv.bind(lib);
      const held: Array<[Uint8Array, unknown]> = [];
      let holding = false;
      lib.recv = (data, info) => {
        if (!holding) return recv(data, info);
        held.push([Uint8Array.from(data), info]);
        return Promise.resolve();
      };

      const u = await p.server.openUni();
      await u.write(enc.encode('event'));
      const reader = (await nextStream(p.client))[Symbol.asyncIterator]();
      // The client acks on its next flush, which runs after this read settles: hold that ACK.
      const first = await reader.next();
      holding = true;
      expect(dec.decode(first.value)).toBe('event');
      const end = reader.next();
      await withDeadline(
        (async () => {
          while (held.length === 0) await new Promise((r) => setImmediate(r));
        })(),
        10_000,
        'the client to ack the data',
      );

      await u.end();
      // Still in the turn that wrote the FIN: the ACK is processed before any deferred flush.
      holding = false;
      for (const [data, info] of held.splice(0)) await recv(data, info);

      const r = await withDeadline(end, 10_000, 'the end of the stream at the client');
      expect(r.done).toBe(true);
    } finally {
      await p.cleanup();
    }
  });
});
