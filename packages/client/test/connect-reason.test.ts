// Goal: a connect that fails names the last server's reason in its one-line message on both
// transports, even when the transport's innermost error carries no message (QUIC's handshake
// timeout); a broker whose certificate the client does not trust is named so, with how to trust
// it. Method: `connect` to a UDP socket held bound and silent, to a TCP port released a moment
// before, and to listeners on both transports serving a self-signed certificate.
import { createSocket } from 'node:dgram';
import { type Socket, createServer } from 'node:net';
import { releasedTcpPort, tempDir } from '@felix/testing-harness';
import { listen, loadOrCreateDevCertificate } from '@felix/transport';
import { describe, expect, it } from 'vitest';
import { AbortedError, ConnectError, connect } from '../src/index.js';

describe('connect failures', () => {
  it('a_failed_connect_names_its_reason_on_both_transports', async () => {
    const udp = createSocket('udp4');
    await new Promise<void>((ok) => udp.bind(0, '127.0.0.1', ok));
    const quicPort = udp.address().port;
    const tlsPort = await releasedTcpPort();

    const quic = await connect({
      tenant: 't1',
      servers: [`quic://127.0.0.1:${quicPort}`],
      connectTimeoutMs: 400,
    })
      .catch((e: unknown) => e)
      .finally(() => new Promise<void>((ok) => udp.close(() => ok())));
    expect(quic).toBeInstanceOf(ConnectError);
    expect((quic as Error).message).toMatch(
      /^could not connect to quic:\/\/.*: .*no handshake within \d+ ms$/,
    );

    const tls = await connect({
      tenant: 't1',
      servers: [`tls://127.0.0.1:${tlsPort}`],
      connectTimeoutMs: 2_000,
    }).catch((e: unknown) => e);
    expect(tls).toBeInstanceOf(ConnectError);
    expect((tls as Error).message).toMatch(/: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });

  it('a_connect_refused_for_the_brokers_certificate_says_how_to_trust_it', async () => {
    const dir = await tempDir('felix-client-cert-');
    const tls = await loadOrCreateDevCertificate(dir.path);
    for (const transport of ['quic', 'tls'] as const) {
      const listener = await listen({ transport, host: '127.0.0.1', port: 0, tls });
      const err = await connect({
        tenant: 't1',
        servers: [`${transport}://127.0.0.1:${listener.port}`],
        connectTimeoutMs: 5_000,
      })
        .catch((e: unknown) => e)
        .finally(() => listener.close());
      expect(err, transport).toBeInstanceOf(ConnectError);
      const message = (err as Error).message;
      expect(message, transport).not.toMatch(/TlsFail$/);
      expect(message, transport).toMatch(/certificate/);
      expect(message, transport).toMatch(/tls\.fingerprint .*cert_fingerprint.* or tls\.ca/);
    }
    await dir.cleanup();
  });

  it('a_connect_refused_for_the_brokers_certificate_everywhere_is_never_retryable', async () => {
    // Before, no `tls` option against a self-signed broker was a ConnectError of class
    // `retry_after_backoff`: the same options meet the same certificate on every retry. A seed
    // that failed otherwise (refused: maybe restarting) keeps the connect retryable.
    const dir = await tempDir('felix-client-cert-');
    const tls = await loadOrCreateDevCertificate(dir.path);
    const refusedPort = await releasedTcpPort();
    for (const transport of ['quic', 'tls'] as const) {
      const listener = await listen({ transport, host: '127.0.0.1', port: 0, tls });
      const self = `${transport}://127.0.0.1:${listener.port}`;
      try {
        const alone = await connect({
          tenant: 't1',
          servers: [self],
          connectTimeoutMs: 5_000,
        }).catch((e: unknown) => e);
        expect(alone, transport).toBeInstanceOf(ConnectError);
        expect((alone as ConnectError).retry, transport).toBe('never');
        const mixed = await connect({
          tenant: 't1',
          servers: [self, `tls://127.0.0.1:${refusedPort}`],
          connectTimeoutMs: 5_000,
        }).catch((e: unknown) => e);
        expect(mixed, transport).toBeInstanceOf(ConnectError);
        expect((mixed as ConnectError).retry, transport).toBe('retry_after_backoff');
      } finally {
        await listener.close();
      }
    }
    await dir.cleanup();
  });

  it('a_connect_aborted_while_its_dial_waits_ends_at_the_abort_with_aborted_error', async () => {
    // A server that takes the connection and never answers (a QUIC port held silent, a TCP
    // listener that never speaks TLS): the dial waits out connectTimeoutMs. The caller's signal
    // must end the connect when it aborts, not that timeout later as a ConnectError.
    const udp = createSocket('udp4');
    await new Promise<void>((ok) => udp.bind(0, '127.0.0.1', ok));
    const held: Socket[] = [];
    const tcp = createServer((s) => held.push(s));
    await new Promise<void>((ok) => tcp.listen(0, '127.0.0.1', ok));
    const ports = { quic: udp.address().port, tls: (tcp.address() as { port: number }).port };
    try {
      for (const transport of ['quic', 'tls'] as const) {
        const ac = new AbortController();
        const startedMs = Date.now();
        const connecting = connect({
          tenant: 't1',
          servers: [`${transport}://127.0.0.1:${ports[transport]}`],
          tls: { insecure: true },
          connectTimeoutMs: 20_000,
          signal: ac.signal,
        }).catch((e: unknown) => e);
        setTimeout(() => ac.abort(), 100);
        const err = await connecting;
        expect(err).toBeInstanceOf(AbortedError);
        // Well before the 20 s dial bound (the abort came at 100 ms).
        expect(Date.now() - startedMs).toBeLessThan(5_000);
      }
    } finally {
      for (const s of held) s.destroy();
      await new Promise<void>((ok) => tcp.close(() => ok()));
      await new Promise<void>((ok) => udp.close(() => ok()));
    }
  });
});
