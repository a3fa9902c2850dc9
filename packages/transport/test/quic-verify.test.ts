// Goal: a QUIC client that verifies the server by its CA (no fingerprint pin), or does not
// verify it at all, opens streams as a pinned client does, whether it dials an address or a
// name; a certificate its CA did not sign, or not valid for the address or name dialled, is
// still refused.
// Method: a real QUIC listener on loopback serving a certificate signed by a test CA (made with
// openssl), dialed with `ca` (by address and by server name), with `insecureSkipVerify`, and
// with the wrong CA or name; the client writes its first stream at once, as a Felix client's
// auth stream is, and each dial must carry an echo within a deadline.
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { type Connection, DialError, type DialOptions, dial, listen } from '../src/index.js';
import { caSignedMaterial } from './ca-material.js';
import { dec, devMaterial, enc, nextStream, readAll } from './helpers.js';

const ECHO_DEADLINE_MS = 10_000;
/** A certificate valid for a host name only, not for the address the test dials. */
const DNS_ONLY = 'DNS:localhost';

/** Dials a CA-signed QUIC listener with `opts` and echoes one message through a client stream. */
async function echoOverQuic(opts: DialOptions, sans?: string): Promise<string> {
  const { server } = await caSignedMaterial(sans);
  const listener = await listen({ transport: 'quic', host: '127.0.0.1', port: 0, tls: server });
  let client: Connection | null = null;
  try {
    const accepted = listener.connections()[Symbol.asyncIterator]();
    client = await dial(`quic://127.0.0.1:${listener.port}`, opts);
    // The stream is opened and written at once, as a Felix client's auth stream is: its first
    // bytes can share a datagram with the end of the handshake.
    const s = await client.openBidi();
    await s.write(enc.encode('hello by ca'));
    await s.end();
    const next = await accepted.next();
    if (next.done) throw new Error('listener ended before accepting');
    const serverConn = next.value;
    const echo = (async () => {
      const got = await nextStream(serverConn);
      await got.write(await readAll(got));
      await got.end();
    })();
    const [back] = await withDeadline(
      Promise.all([readAll(s), echo]),
      ECHO_DEADLINE_MS,
      'an echo over the verified connection',
    );
    return dec.decode(back);
  } finally {
    await client?.close().catch(() => {}); // a failed test may have broken it already
    await listener.close();
  }
}

describe('quic server verification', () => {
  it('a_quic_client_that_verifies_the_server_by_its_ca_opens_streams', async () => {
    const { caPem } = await caSignedMaterial();
    expect(await echoOverQuic({ ca: caPem })).toBe('hello by ca');
  });

  it('a_quic_client_verifying_by_ca_checks_the_name_it_dialled', async () => {
    const { caPem } = await caSignedMaterial();
    expect(await echoOverQuic({ ca: caPem, serverName: 'localhost' })).toBe('hello by ca');
    const wrongName = await echoOverQuic({ ca: caPem, serverName: 'elsewhere.example' }).catch(
      (e: unknown) => e,
    );
    expect(wrongName).toBeInstanceOf(DialError);
  });

  it('a_quic_client_dialling_an_address_refuses_a_certificate_without_that_ip', async () => {
    const { caPem } = await caSignedMaterial(DNS_ONLY);
    const refused = await echoOverQuic({ ca: caPem }, DNS_ONLY).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DialError);
    expect((refused as DialError).message).toMatch(/not valid for IP address 127\.0\.0\.1/);
    // The same certificate is fine for the name it carries.
    expect(await echoOverQuic({ ca: caPem, serverName: 'localhost' }, DNS_ONLY)).toBe(
      'hello by ca',
    );
  });

  it('a_quic_client_that_skips_verification_opens_streams', async () => {
    expect(await echoOverQuic({ insecureSkipVerify: true })).toBe('hello by ca');
  });

  it('a_quic_client_refuses_a_server_certificate_its_ca_did_not_sign', async () => {
    const other = await devMaterial();
    const refused = await echoOverQuic({ ca: other.certPem }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DialError);
  });
});
