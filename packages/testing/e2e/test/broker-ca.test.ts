// Goal: a broker serving a certificate from the operator's own CA (the production setup) is
// usable by a client that verifies it by that CA alone, over QUIC as over TLS, dialled by
// address; a client given another CA is refused.
// Method: one real broker process started with `FELIX_BROKER_TLS_CERT`/`_KEY` naming a
// certificate signed by a test CA (made with openssl); real clients connect with `tls: { ca }`
// (no fingerprint) and publish, which needs the auth stream the client opens at once.
import { ConnectError, connect } from '@felix/client';
import { type TestCa, makeTestCa, tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { TRANSPORTS } from './support.js';

describe('a broker with a CA-signed certificate', () => {
  let broker: BrokerProcess;
  let ca: TestCa;
  let otherCa: TestCa;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    const other = await tempDir();
    cleanup = async () => {
      await dir.cleanup();
      await other.cleanup();
    };
    [ca, otherCa] = await Promise.all([makeTestCa(dir.path), makeTestCa(other.path)]);
    broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: s }\n',
      dir: dir.path,
      env: { FELIX_BROKER_TLS_CERT: ca.certPath, FELIX_BROKER_TLS_KEY: ca.keyPath },
    });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  for (const transport of TRANSPORTS) {
    it(`a_client_verifying_the_broker_by_its_ca_publishes_over_${transport}`, async () => {
      const felix = await connect({
        servers: [broker.url(transport)],
        tenant: 't1',
        tls: { ca: ca.caPem },
        reconnect: { attemptsMax: 1 },
      });
      try {
        expect((await felix.publish('s', `by ca over ${transport}`)).offset).not.toBeNull();
      } finally {
        await felix.close();
      }
    });
  }

  it('a_client_given_another_ca_is_refused_by_the_broker_certificate_over_quic', async () => {
    const refused = await connect({
      servers: [broker.url('quic')],
      tenant: 't1',
      tls: { ca: otherCa.caPem },
      reconnect: { attemptsMax: 1 },
      connectTimeoutMs: 5_000,
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
  });
});
