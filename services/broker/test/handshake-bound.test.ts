// Goal: a broker bounds the TLS connections it holds in their handshake (no connection limit
// sees them before a session exists): past `broker.max_client_connections` they are closed on
// arrival and counted with the other refusals.
// Method: a real broker process with a limit of two; raw TCP sockets that never speak TLS.
import { type Socket, connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { brokerMetric, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';

const LIMIT = 2;

/** A TCP connection that never speaks TLS; `closed` turns true when the broker ends it. */
async function idleSocket(port: number, all: Socket[]): Promise<{ closed: () => boolean }> {
  const socket = tcpConnect(port, '127.0.0.1');
  all.push(socket);
  let closed = false;
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => undefined); // a refused socket may be reset: that is the point
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { closed: () => closed };
}

describe('tls handshake bound of the broker', () => {
  it('tls_handshakes_past_the_client_connection_limit_are_closed_on_arrival_and_counted', async () => {
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: s }\n',
      dir: dir.path,
      env: { FELIX_BROKER_MAX_CLIENT_CONNECTIONS: String(LIMIT) },
    });
    const sockets: Socket[] = [];
    try {
      const port = Number(new URL(broker.url('tls').replace('tls:', 'http:')).port);
      const held = [];
      for (let i = 0; i < LIMIT; i++) held.push(await idleSocket(port, sockets));
      const excess = await idleSocket(port, sockets);
      await waitFor(() => excess.closed(), 'the excess connection to be closed by the broker');
      expect(held.map((s) => s.closed())).toEqual([false, false]);
      await waitFor(
        async () =>
          (await brokerMetric(
            broker,
            /felix_broker_connections_refused_total\{reason="handshakes"\} (\d+)/,
          )) === 1,
        'the refusal to be counted',
      );
    } finally {
      for (const s of sockets) s.destroy();
      await broker.stop();
      await dir.cleanup();
    }
  });

  it('tls_connections_that_never_start_the_multiplexer_count_against_the_per_ip_bound', async () => {
    // `broker.connections_per_ip_max`: connections held at once from one IP, further ones closed
    // on arrival before they authenticate. A peer that completes TLS (ALPN felix/1) and then
    // sends nothing is held until the 30 s idle timeout without being counted anywhere: not in
    // felix_broker_connections, not in the per-IP bound, not in the connection limit.
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: s }\n',
      dir: dir.path,
      env: { FELIX_BROKER_CONNECTIONS_PER_IP_MAX: String(LIMIT) },
    });
    const sockets: Socket[] = [];
    try {
      const port = Number(new URL(broker.url('tls').replace('tls:', 'http:')).port);
      const closed: boolean[] = [];
      for (let i = 0; i < LIMIT + 3; i++) {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port,
          rejectUnauthorized: false, // the broker's development certificate: trust is not tested
          ALPNProtocols: ['felix/1'],
        });
        sockets.push(socket);
        closed.push(false);
        socket.on('close', () => {
          closed[i] = true;
        });
        socket.on('error', () => undefined); // a refused socket may be reset: that is the point
        socket.resume(); // reads (and drops) what the broker sends, so its close is seen
        await new Promise<void>((resolve, reject) => {
          socket.once('secureConnect', resolve);
          socket.once('error', reject);
        });
      }
      await waitFor(
        () => closed.filter(Boolean).length >= 3,
        'the connections past the per-IP bound to be closed by the broker',
        10_000,
      );
      expect(
        await brokerMetric(
          broker,
          /felix_broker_connections_refused_total\{reason="per_ip"\} (\d+)/,
        ),
      ).toBe(3);
    } finally {
      for (const s of sockets) s.destroy();
      await broker.stop();
      await dir.cleanup();
    }
  });
});
