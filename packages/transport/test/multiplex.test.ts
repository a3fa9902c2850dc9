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

  it('a_byte_stream_that_ends_before_the_handshake_rejects_with_a_closed_connection', async () => {
    const [a, b] = await tcpPair();
    b.destroy();
    await expect(
      withDeadline(multiplex(a, { role: 'client' }), 5000, 'rejection'),
    ).rejects.toBeInstanceOf(ConnectionClosedError);
  });
});
