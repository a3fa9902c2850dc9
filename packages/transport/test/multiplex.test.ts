/**
 * Goal: `multiplex()` runs the TLS transport's multiplexer over a byte stream the caller holds,
 * and a stream that ends before the handshake fails with the transport's typed error.
 * Method: a plain TCP socket pair on loopback (no TLS), both ends multiplexed in this process;
 * echo on a bidi stream, and a server-opened uni stream; then a socket whose peer hangs up.
 */
import { type Socket, connect, createServer } from 'node:net';
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { ConnectionClosedError, multiplex } from '../src/index.js';
import { readAll } from './helpers.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Both ends of one loopback TCP connection. */
async function tcpPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const dialed = connect(port, '127.0.0.1');
  const [a, b] = await Promise.all([
    new Promise<Socket>((r) => dialed.once('connect', () => r(dialed))),
    accepted,
  ]);
  server.close();
  return [a, b];
}

describe('multiplex over a caller-held byte stream', () => {
  it('the_multiplexer_carries_streams_over_a_plain_tcp_socket', async () => {
    const [a, b] = await tcpPair();
    const [client, server] = await withDeadline(
      Promise.all([multiplex(a, { role: 'client' }), multiplex(b, { role: 'server' })]),
      5000,
      'both ends ready',
    );
    void (async () => {
      for await (const s of server.incoming()) {
        const got = await readAll(s);
        await s.write(enc(`echo:${dec(got)}`));
        await s.end();
        const u = await server.openUni();
        await u.write(enc('pushed'));
        await u.end();
      }
    })();
    const s = await client.openBidi();
    await s.write(enc('hello'));
    await s.end();
    expect(dec(await withDeadline(readAll(s), 5000, 'echo'))).toBe('echo:hello');
    const uni = await withDeadline(
      (async () => {
        for await (const u of client.incoming()) return u;
        throw new Error('no uni stream');
      })(),
      5000,
      'uni stream',
    );
    expect(dec(await withDeadline(readAll(uni), 5000, 'uni bytes'))).toBe('pushed');
    expect(client.transport).toBe('tls');
    await client.close();
    await server.close();
  });

  it('read_chunks_hands_over_queued_then_arriving_chunks_in_order_then_the_end', async () => {
    const [a, b] = await tcpPair();
    const [client, server] = await withDeadline(
      Promise.all([multiplex(a, { role: 'client' }), multiplex(b, { role: 'server' })]),
      5000,
      'both ends ready',
    );
    const s = await client.openBidi();
    await s.write(enc('one'));
    const accepted = await withDeadline(
      (async () => {
        for await (const x of server.incoming()) return x;
        throw new Error('no stream');
      })(),
      5000,
      'accepted stream',
    );
    // 'one' is queued on the accepted stream before its reader comes.
    await withDeadline(
      (async () => {
        while ((accepted as unknown as { bufferedBytes: number }).bufferedBytes === 0)
          await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'first chunk queued',
    );
    const got: string[] = [];
    const ended = new Promise<Error | null>((resolve) => {
      accepted.readChunks!((c) => got.push(dec(c)), resolve);
    });
    expect(got).toEqual(['one']);
    await s.write(enc('two'));
    await s.end();
    expect(await withDeadline(ended, 5000, 'end')).toBeNull();
    expect(got.join('')).toBe('onetwo');
    await client.close();
    await server.close();
  });

  it('chunks_that_arrive_while_a_chunk_reader_is_paused_wait_uncredited_then_come_in_order_before_the_end', async () => {
    const [a, b] = await tcpPair();
    const window = 1024;
    const [client, server] = await withDeadline(
      Promise.all([
        multiplex(a, { role: 'client' }),
        multiplex(b, { role: 'server', streamWindowBytes: window }),
      ]),
      5000,
      'both ends ready',
    );
    const s = await client.openBidi();
    await s.write(enc('first'));
    const accepted = await withDeadline(
      (async () => {
        for await (const x of server.incoming()) return x;
        throw new Error('no stream');
      })(),
      5000,
      'accepted stream',
    );
    const got: Uint8Array[] = [];
    let ended: Error | null | undefined;
    // The reader pauses on its first chunk, as the broker's session does while a request awaits.
    accepted.readChunks!(
      (c) => {
        got.push(c.slice());
        if (got.length === 1) accepted.pauseChunks!();
      },
      (err) => {
        ended = err;
      },
    );
    await withDeadline(
      (async () => {
        while (got.length === 0) await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'first chunk',
    );
    // Three windows' worth: without credit the writer stalls once the window is queued.
    const big = new Uint8Array(3 * window).map((_, i) => i % 251);
    let written = false;
    void s.write(big).then(() => {
      written = true;
    });
    void s.end();
    const buffered = () => (accepted as unknown as { bufferedBytes: number }).bufferedBytes;
    await withDeadline(
      (async () => {
        while (buffered() < window - 'first'.length) await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'window queued',
    );
    expect(got.length).toBe(1);
    expect(written).toBe(false);
    expect(ended).toBeUndefined();
    expect(buffered()).toBeLessThanOrEqual(window);
    accepted.resumeChunks!();
    await withDeadline(
      (async () => {
        while (ended === undefined) await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'end',
    );
    expect(ended).toBeNull();
    expect(written).toBe(true);
    const all = Buffer.concat(got.slice(1));
    expect(dec(got[0]!)).toBe('first');
    expect(Buffer.compare(all, Buffer.from(big))).toBe(0);
    await client.close();
    await server.close();
  });

  it('write_now_gives_no_promise_for_bytes_within_credit_and_the_write_promise_past_it', async () => {
    const [a, b] = await tcpPair();
    const window = 1024;
    const [client, server] = await withDeadline(
      Promise.all([
        multiplex(a, { role: 'client' }),
        multiplex(b, { role: 'server', streamWindowBytes: window }),
      ]),
      5000,
      'both ends ready',
    );
    const s = await client.openBidi();
    expect(s.writeNow!(enc('now'))).toBeNull();
    const accepted = await withDeadline(
      (async () => {
        for await (const x of server.incoming()) return x;
        throw new Error('no stream');
      })(),
      5000,
      'accepted stream',
    );
    // Past the peer's window the write waits for credit: a promise, settled once read.
    const big = new Uint8Array(2 * window).fill(7);
    const later = s.writeNow!(big);
    expect(later).toBeInstanceOf(Promise);
    const got: Uint8Array[] = [];
    const ended = new Promise<Error | null>((resolve) => {
      accepted.readChunks!((c) => got.push(c.slice()), resolve);
    });
    await withDeadline(later!, 5000, 'credited write');
    await s.end();
    expect(await withDeadline(ended, 5000, 'end')).toBeNull();
    const all = Buffer.concat(got);
    expect(dec(all.subarray(0, 3))).toBe('now');
    expect(all.length).toBe(3 + big.length);
    await client.close();
    await server.close();
  });

  it('a_byte_stream_that_ends_before_the_handshake_rejects_with_a_closed_connection', async () => {
    const [a, b] = await tcpPair();
    b.destroy();
    await expect(
      withDeadline(multiplex(a, { role: 'client' }), 5000, 'rejection'),
    ).rejects.toBeInstanceOf(ConnectionClosedError);
  });
});
