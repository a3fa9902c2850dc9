/**
 * Goal: a listener given `clientCa` accepts only dialers presenting a certificate of that CA
 * (mutual TLS, both transports); it can read the certificate the dialer presented; and a
 * dialer naming the node it means to reach (`serverName`) refuses a listener whose certificate
 * names another. This is what brokers use to know each other by node id.
 * Method: one test CA with certificates for DNS names b1 and b2, a second CA that signed
 * nothing the listener trusts; real listeners and dials over QUIC and TLS; a connection counts
 * as refused when the dial fails or the connection closes before a stream round trip.
 */
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { issueTestCert, makeTestCa, tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Connection, type Listener, type TlsMaterial, dial, listen } from '../src/index.js';

type Kind = 'quic' | 'tls';
let cleanup: () => Promise<void>;
let caPem: string;
let b1: TlsMaterial;
let b2: TlsMaterial;
let stranger: TlsMaterial;

beforeAll(async () => {
  const dir = await tempDir('felix-mtls-');
  const other = await tempDir('felix-mtls-other-');
  cleanup = async () => {
    await dir.cleanup();
    await other.cleanup();
  };
  const ca = await makeTestCa(dir.path, 'DNS:b1,IP:127.0.0.1');
  caPem = ca.caPem;
  b1 = { certPem: ca.certPem, keyPem: ca.keyPem };
  b2 = await issueTestCert(dir.path, 'b2', 'DNS:b2');
  const foreign = await makeTestCa(join(other.path), 'DNS:b2');
  stranger = { certPem: foreign.certPem, keyPem: foreign.keyPem };
});
afterAll(() => cleanup());

async function mtlsListener(kind: Kind): Promise<Listener> {
  return listen({ transport: kind, port: 0, tls: b1, clientCa: caPem });
}

/** Whether a dial yields a connection that carries a stream round trip. */
async function usable(
  kind: Kind,
  listener: Listener,
  opts: Parameters<typeof dial>[1],
): Promise<Connection | null> {
  const accepted = serveEcho(listener);
  let conn: Connection;
  try {
    conn = await dial(`${kind}://127.0.0.1:${listener.port}`, { dialTimeoutMs: 3_000, ...opts });
  } catch {
    // A dial refused during the handshake is one of the outcomes under test.
    return null;
  }
  try {
    const s = await conn.openBidi();
    await s.write(new Uint8Array([7]));
    await s.end();
    for await (const chunk of s) if (chunk[0] === 7) return conn;
    return null;
  } catch {
    // Over TLS 1.3 the server judges the client's certificate after the client's handshake
    // finished: the refusal arrives as a closed connection on the first read.
    await conn.close().catch(() => undefined);
    return null;
  } finally {
    void accepted;
  }
}

const seen: Connection[] = [];
/** Echoes every stream of every accepted connection (once per listener). */
const serving = new WeakSet<Listener>();
function serveEcho(listener: Listener): void {
  if (serving.has(listener)) return;
  serving.add(listener);
  void (async () => {
    for await (const c of listener.connections()) {
      seen.push(c);
      void (async () => {
        for await (const s of c.incoming()) {
          void (async () => {
            for await (const chunk of s) await s.write(chunk);
            await s.end();
            // A refused or closed peer ends its streams: nothing to echo any more.
          })().catch(() => undefined);
        }
        // The connection closed under the loop (a refused handshake, the test's close).
      })().catch(() => undefined);
    }
  })();
}

for (const kind of ['quic', 'tls'] as const) {
  describe(`mutual tls over ${kind}`, () => {
    it('a_listener_requiring_client_certificates_refuses_dialers_without_one', async () => {
      const listener = await mtlsListener(kind);
      try {
        expect(await usable(kind, listener, { ca: caPem, serverName: 'b1' })).toBeNull();
        const foreign = { ca: caPem, serverName: 'b1', clientTls: stranger };
        expect(await usable(kind, listener, foreign)).toBeNull();
      } finally {
        await listener.close();
      }
    });

    it('a_listener_requiring_client_certificates_sees_the_one_a_dialer_presented', async () => {
      const listener = await mtlsListener(kind);
      try {
        const conn = await usable(kind, listener, { ca: caPem, serverName: 'b1', clientTls: b2 });
        expect(conn).not.toBeNull();
        // The dialer sees the listener's certificate; the listener the dialer's.
        expect(new X509Certificate(conn!.peerCertificate()!).checkHost('b1')).toBe('b1');
        const accepted = seen[seen.length - 1]!;
        const presented = new X509Certificate(accepted.peerCertificate()!);
        expect(presented.checkHost('b2')).toBe('b2');
        expect(presented.checkHost('b1')).toBeUndefined();
        await conn!.close();
      } finally {
        await listener.close();
      }
    });

    it('a_dialer_refuses_a_listener_whose_certificate_names_another_node', async () => {
      const listener = await mtlsListener(kind);
      try {
        const conn = await usable(kind, listener, { ca: caPem, serverName: 'b3', clientTls: b2 });
        expect(conn).toBeNull();
      } finally {
        await listener.close();
      }
    });
  });
}

describe('a refused client certificate', () => {
  /** The reason a dialer is given: its dial's failure, or its connection's first stream's. */
  async function refusal(kind: Kind, clientTls: TlsMaterial | undefined): Promise<string> {
    const listener = await mtlsListener(kind);
    try {
      const conn = await dial(`${kind}://127.0.0.1:${listener.port}`, {
        dialTimeoutMs: 3_000,
        ca: caPem,
        serverName: 'b1',
        ...(clientTls === undefined ? {} : { clientTls }),
      });
      // QUIC's dialer finishes its handshake before the listener judges its certificate.
      try {
        const s = await conn.openBidi();
        await s.write(new Uint8Array([7]));
        for await (const _ of s) return 'the listener answered';
        return 'the stream ended without a reason';
      } catch (err) {
        return (err as Error).message;
      } finally {
        await conn.close().catch(() => undefined); // refused already: nothing left to close
      }
    } catch (err) {
      return (err as Error).message;
    } finally {
      await listener.close();
    }
  }

  it('a_dialer_refused_for_its_client_certificate_is_told_why_on_both_transports', async () => {
    expect(await refusal('tls', stranger)).toMatch(
      /the listener refused this client certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)$/,
    );
    expect(await refusal('tls', undefined)).toMatch(
      /the listener requires a client certificate and none was presented$/,
    );
    expect(await refusal('quic', stranger)).toMatch(
      /alert 48 \(unknown_ca\): it does not accept this side's certificate/,
    );
    expect(await refusal('quic', undefined)).toMatch(
      /alert 116 \(certificate_required\): it requires a client certificate/,
    );
  });
});
