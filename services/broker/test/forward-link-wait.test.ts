// Goal: a forward to a leader whose link is not open yet waits a bounded time for it
// (FORWARD_LINK_WAIT_MS) and then fails unsent, so the client retries and finds the new leader,
// instead of waiting out the whole peer dial (PEER_DIAL_TIMEOUT_MS, 5 s) against a stopped
// leader, which accepts the TCP connection and never answers the handshake (a trial's publish
// waited 5.3 s there after the control plane had named the new leader). The dial goes on for
// the requests after it. A request withdrawn while its link dials (a stopping shipper's) fails
// unsent at once.
// Method: a TCP server that accepts and stays silent stands in for the stopped leader; a peer
// link to it is asked to send with a 200 ms link wait, then without one.
import { type Server, type Socket, createServer } from 'node:net';
import { waitFor, withDeadline } from '@felix/testing-harness';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PeerPool } from '../src/cluster/peer-pool.js';
import { PeerUnreachableError } from '../src/errors.js';

const silent = pino({ level: 'silent' });

async function silentServer(): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s); // accepted, never answered: a stopped process's kernel does as much
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  return { server, port, sockets };
}

/** Links from broker `a` to a peer at `port` on loopback, dialed over TLS without a CA. */
function poolTo(port: number): PeerPool {
  return new PeerPool({
    selfId: 'a',
    transport: 'tls',
    cluster: null,
    clientTls: {} as never,
    address: () => `127.0.0.1:${port}`,
    log: silent,
  });
}

describe('a forward to a leader that never answers its dial', () => {
  it('a_forward_waits_a_bounded_time_for_a_link_that_never_handshakes_and_fails_unsent', async () => {
    const { server, port, sockets } = await silentServer();
    const pool = poolTo(port);
    try {
      // Far inside the dial's own 5 s bound: only the link wait can end it this soon.
      const send = (what: string) =>
        withDeadline(
          pool
            .link('b')
            .request(new Uint8Array(1), 5_000, 200)
            .catch((e: unknown) => e),
          2_000,
          what,
        );
      const err = await send('the bounded link wait');
      expect(err).toBeInstanceOf(PeerUnreachableError);
      expect((err as Error).message).toMatch(/no link within 200 ms \(its dial goes on\)/);
      // The dial went on: the server holds the one connection it accepted, and a second
      // request waits on that same dial rather than opening another.
      expect(sockets).toHaveLength(1);
      const again = await send('the second bounded wait');
      expect(again).toBeInstanceOf(PeerUnreachableError);
      expect(sockets).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy(); // ends the dial, which close() waits for
      await pool.close();
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  }, 20_000);

  it('a_request_withdrawn_while_its_link_dials_fails_unsent_at_once', async () => {
    // A stopping shipper's request to a stopped peer waited the whole dial before its stop could
    // finish, and the next generation's shipper with it.
    const { server, port, sockets } = await silentServer();
    const pool = poolTo(port);
    try {
      const withdrawn = new AbortController();
      const sending = pool
        .link('b')
        .request(new Uint8Array(1), 5_000, undefined, withdrawn.signal)
        .catch((e: unknown) => e);
      // The dial reached the silent server; the request waits on its handshake.
      await waitFor(() => sockets.length === 1, 'the dial to reach the silent server');
      withdrawn.abort();
      const err = await withDeadline(sending, 1_000, 'the withdrawn request to fail');
      expect(err).toBeInstanceOf(PeerUnreachableError);
      expect((err as Error).message).toMatch(/withdrawn before its link opened/);
      // One already withdrawn is not sent at all.
      const late = await pool
        .link('b')
        .request(new Uint8Array(1), 5_000, undefined, withdrawn.signal)
        .catch((e: unknown) => e);
      expect((late as Error).message).toMatch(/withdrawn before it was sent/);
      expect(sockets).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy();
      await pool.close();
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  }, 20_000);
});
