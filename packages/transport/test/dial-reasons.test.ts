// Goal: a dial that fails says why on both transports, in words an operator can act on: a dial
// to a closed port names the refusal at once on both (QUIC through its refusal probe, which
// hears the host's ICMP port unreachable), and a QUIC dial that gets no handshake says so with
// its deadline (the QUIC library's own timeout error carries an empty message).
// A dial whose server certificate is refused says that in words (quiche's own error says only
// "TlsFail") and is marked `certificate` so a caller can hint at its trust options.
// Method: a QUIC dial to a UDP socket held bound and silent (nobody else can take its port), a
// TLS dial to a TCP port released a moment before, each with a short deadline; the DialError's
// message is read. Listeners on both transports with a self-signed certificate, dialled with no
// CA or pin, and with a wrong pin.
import { createSocket } from 'node:dgram';
import { releasedTcpPort } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { DialError, dial, listen } from '../src/index.js';
import { devMaterial } from './helpers.js';

/** A UDP socket bound on loopback that never answers; closed by the caller. */
async function silentUdp(): Promise<{ port: number; close: () => Promise<void> }> {
  const sock = createSocket('udp4');
  await new Promise<void>((ok) => sock.bind(0, '127.0.0.1', ok));
  return {
    port: sock.address().port,
    close: () => new Promise<void>((ok) => sock.close(() => ok())),
  };
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

  it('a_quic_dial_to_a_closed_port_fails_at_once_naming_the_refusal', async () => {
    // A port bound a moment ago and released: nothing listens on it now.
    const released = await silentUdp();
    await released.close();
    const err = await dial(`quic://127.0.0.1:${released.port}`, {
      insecureSkipVerify: true,
      dialTimeoutMs: 3_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialError);
    // Not "no handshake within 3000 ms": the host's ICMP port unreachable ended the dial.
    expect((err as Error).message).toBe(
      `dial quic://127.0.0.1:${released.port} failed: connection refused (nothing listens on UDP port ${released.port})`,
    );
    expect((err as DialError).retry).toBe('retry_after_backoff');
  });

  it('a_quic_dial_to_a_host_name_that_does_not_resolve_says_so_as_a_tls_dial_does', async () => {
    // `.invalid` never resolves (RFC 6761). The QUIC library said only "Host provided was not valid".
    const err = await dial('quic://nosuchhost.invalid:5000', {
      insecureSkipVerify: true,
      dialTimeoutMs: 3_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DialError);
    // The lookup's own error, as a TLS dial reports it (ENOTFOUND; EAI_AGAIN where DNS is down).
    expect((err as Error).message).toMatch(
      /^dial quic:\/\/nosuchhost\.invalid:5000 failed: getaddrinfo (ENOTFOUND|EAI_AGAIN) nosuchhost\.invalid$/,
    );
    expect((err as Error).cause).toBeInstanceOf(Error);
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

  it('a_dial_refused_for_the_servers_certificate_says_so_on_both_transports', async () => {
    const tls = await devMaterial();
    const wrongPin = 'ab'.repeat(32);
    for (const transport of ['quic', 'tls'] as const) {
      const listener = await listen({ transport, host: '127.0.0.1', port: 0, tls });
      try {
        const url = `${transport}://127.0.0.1:${listener.port}`;
        const untrusted = await dial(url, { dialTimeoutMs: 5_000 }).catch((e: unknown) => e);
        expect(untrusted, transport).toBeInstanceOf(DialError);
        expect((untrusted as DialError).certificate, transport).toBe(true);
        expect((untrusted as DialError).reason, transport).toMatch(
          transport === 'quic' ? /server certificate failed verification/ : /self-signed/,
        );
        const pinned = await dial(url, { fingerprint: wrongPin, dialTimeoutMs: 5_000 }).catch(
          (e: unknown) => e,
        );
        expect(pinned, transport).toBeInstanceOf(DialError);
        expect((pinned as DialError).certificate, transport).toBe(true);
        expect((pinned as DialError).reason, transport).toMatch(/does not match the pinned/);
      } finally {
        await listener.close();
      }
    }
    const port = await releasedTcpPort();
    const refused = await dial(`tls://127.0.0.1:${port}`, { dialTimeoutMs: 2_000 }).catch(
      (e: unknown) => e,
    );
    expect((refused as DialError).certificate).toBe(false);
  });
});
