// Goal: a dial that fails says why on both transports, in words an operator can act on: a TLS
// dial to a closed port names the refusal, and a QUIC dial that gets no handshake says so with
// its deadline (the QUIC library's own timeout error carries an empty message).
// Method: a QUIC dial to a UDP socket held bound and silent (nobody else can take its port), a
// TLS dial to a TCP port released a moment before, each with a short deadline; the DialError's
// message is read.
import { createSocket } from 'node:dgram';
import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DialError, dial } from '../src/index.js';

/** A UDP socket bound on loopback that never answers; closed by the caller. */
async function silentUdp(): Promise<{ port: number; close: () => Promise<void> }> {
  const sock = createSocket('udp4');
  await new Promise<void>((ok) => sock.bind(0, '127.0.0.1', ok));
  return {
    port: sock.address().port,
    close: () => new Promise<void>((ok) => sock.close(() => ok())),
  };
}

async function releasedTcpPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

describe('dial failures', () => {
  it('a_quic_dial_that_gets_no_handshake_says_so_with_its_deadline', async () => {
    const silent = await silentUdp();
    const port = silent.port;
    const err = await dial(`quic://127.0.0.1:${port}`, {
      insecureSkipVerify: true,
      dialTimeoutMs: 300,
    })
      .catch((e: unknown) => e)
      .finally(silent.close);
    expect(err).toBeInstanceOf(DialError);
    expect((err as Error).message).toBe(
      `dial quic://127.0.0.1:${port} failed: no handshake within 300 ms`,
    );
  });

  it('a_tls_dial_to_a_closed_port_names_the_refusal', async () => {
    const port = await releasedTcpPort();
    const err = await dial(`tls://127.0.0.1:${port}`, {
      insecureSkipVerify: true,
      dialTimeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialError);
    expect((err as Error).message).toMatch(/failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });
});
