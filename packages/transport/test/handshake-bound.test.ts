/**
 * Connections in their handshake are bounded per listener: a handshake may last the idle
 * timeout, and connection limits count sessions only, so peers that never finish one would
 * otherwise hold descriptors and TLS state without bound. Real sockets on loopback: raw TCP
 * sockets that never speak TLS; for QUIC a quiche client driven by hand that answers the Retry
 * and then stops, so the server holds its connection in the handshake.
 */
import { randomBytes } from 'node:crypto';
import { type Socket as UdpSocket, createSocket } from 'node:dgram';
import { type Socket, connect as tcpConnect } from 'node:net';
import { buildQuicheConfig, clientDefault } from '@felix-vendor/matrixai-quic/config.js';
import quiche from '@felix-vendor/matrixai-quic/native/quiche.js';
import { waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import type { Connection, Listener } from '../src/index.js';
import { QUIC_ALPN } from '../src/quic/quic-transport.js';
import { dialListener, startListener } from './helpers.js';

const BOUND = 3;
const EXCESS = 2;

/** Long enough for the stalled QUIC handshakes to outlast the test's steps; the last dial waits
 *  for them to end by it. */
const QUIC_IDLE_TIMEOUT_MS = 5_000;

let listener: Listener | undefined;
const sockets: Socket[] = [];
const udpSockets: UdpSocket[] = [];
const dialled: Connection[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of udpSockets.splice(0)) s.close();
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

/**
 * A QUIC client that sends its Initial, answers the server's Retry with the Initial that carries
 * the token, and then stops: from there the server holds a connection in its handshake.
 * `replies` counts the datagrams the server sent it (the Retry is the first).
 */
async function stalledQuicClient(port: number): Promise<{ replies: () => number }> {
  const socket = createSocket('udp4');
  udpSockets.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const local = { host: '127.0.0.1', port: socket.address().port };
  const remote = { host: '127.0.0.1', port };
  const config = buildQuicheConfig({
    ...clientDefault,
    verifyPeer: false,
    applicationProtos: [QUIC_ALPN], // another protocol would fail the handshake at once
  });
  const conn = quiche.Connection.connect(null, randomBytes(20), local, remote, config);
  const out = Buffer.alloc(65_536);
  const flush = () => {
    for (let sent = conn.send(out); sent !== null; sent = conn.send(out)) {
      socket.send(out.subarray(0, sent[0]), port, '127.0.0.1');
    }
  };
  let replies = 0;
  socket.on('message', (datagram) => {
    replies += 1;
    if (replies > 1) return; // the server's handshake flight, left unanswered
    conn.recv(datagram, { to: local, from: remote });
    flush();
  });
  flush();
  return { replies: () => replies };
}

describe('handshake bound', () => {
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

  it('quic_connections_in_their_handshake_are_bounded_and_the_excess_initial_dropped', async () => {
    let refused = 0;
    listener = await startListener('quic', {
      handshakesInFlightMax: BOUND,
      idleTimeoutMs: QUIC_IDLE_TIMEOUT_MS,
      onHandshakeRefused: () => {
        refused += 1;
      },
    });
    for (let i = 0; i < BOUND; i++) {
      const held = await stalledQuicClient(listener.port);
      // A second datagram: the server took the token and holds the connection.
      await waitFor(() => held.replies() >= 2, `stalled handshake ${i} to be held`);
    }
    const excess = await stalledQuicClient(listener.port);
    await waitFor(() => refused === 1, 'the excess Initial to be refused');
    // Dropped before any state: the Retry was all the server ever sent it.
    expect(excess.replies()).toBe(1);
    const l = listener;
    const conn = await waitFor(
      () => dialListener('quic', l, { dialTimeoutMs: 5_000 }),
      'a QUIC dial to succeed once the stalled handshakes timed out',
      4 * QUIC_IDLE_TIMEOUT_MS,
    );
    dialled.push(conn);
    expect(conn.transport).toBe('quic');
  });
});
