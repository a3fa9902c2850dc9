/**
 * TLS connections in their handshake are bounded per listener: a handshake may last the idle
 * timeout, and connection limits count sessions only, so idle TCP connections that never speak
 * TLS would otherwise hold descriptors without bound. Real sockets on loopback.
 */
import { type Socket, connect as tcpConnect } from 'node:net';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { Connection, Listener } from '../src/index.js';
import { dialListener, startListener } from './helpers.js';

const BOUND = 3;
const EXCESS = 2;

let listener: Listener | undefined;
const sockets: Socket[] = [];
const dialled: Connection[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(dialled.splice(0).map((c) => c.close()));
  await listener?.close();
  listener = undefined;
});

/** A TCP connection to the listener that never speaks TLS; resolves once connected. */
async function idleSocket(port: number): Promise<{ socket: Socket; closed: () => boolean }> {
  const socket = tcpConnect(port, '127.0.0.1');
  sockets.push(socket);
  let closed = false;
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => undefined); // a reset of a refused socket is what is tested
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, closed: () => closed };
}

describe('tls handshake bound', () => {
  it('tls_connections_in_their_handshake_are_bounded_and_the_excess_closed_on_arrival', async () => {
    let refused = 0;
    listener = await startListener('tls', {
      handshakesInFlightMax: BOUND,
      onHandshakeRefused: () => {
        refused += 1;
      },
    });
    const held = [];
    for (let i = 0; i < BOUND; i++) held.push(await idleSocket(listener.port));
    // One at a time, after the held ones: the listener accepts in arrival order.
    const excess = [];
    for (let i = 0; i < EXCESS; i++) {
      const s = await idleSocket(listener.port);
      await waitFor(() => s.closed(), `excess connection ${i} to be closed by the listener`);
      excess.push(s);
    }
    expect(refused).toBe(EXCESS);
    expect(held.map((s) => s.closed())).toEqual(held.map(() => false));
    // While the bound is full a TLS dial is refused too.
    await expect(dialListener('tls', listener, { dialTimeoutMs: 5_000 })).rejects.toThrow();
    expect(refused).toBe(EXCESS + 1);
    for (const s of held) s.socket.destroy();
    const l = listener;
    const conn = await waitFor(
      () => dialListener('tls', l, { dialTimeoutMs: 5_000 }),
      'a TLS dial to succeed once the idle connections are gone',
    );
    dialled.push(conn);
    expect(conn.transport).toBe('tls');
  });

  it('completed_tls_handshakes_no_longer_count_against_the_handshake_bound', async () => {
    let refused = 0;
    listener = await startListener('tls', {
      handshakesInFlightMax: 1,
      onHandshakeRefused: () => {
        refused += 1;
      },
    });
    for (let i = 0; i < 3; i++) dialled.push(await dialListener('tls', listener));
    expect(dialled).toHaveLength(3);
    expect(refused).toBe(0);
  });
});
