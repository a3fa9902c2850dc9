/** Test CAs and server certificates they signed, validated as `listen` wants them. */
import { TEST_CERT_SANS_DEFAULT, makeTestCa, tempDir } from '@felix/testing-harness';
import { type ValidatedMaterial, validateTlsMaterial } from '../src/index.js';

export interface CaSigned {
  /** The CA certificate (PEM): what a client verifying by CA passes as `ca`. */
  caPem: string;
  /** The server's certificate and key, signed by the CA. */
  server: ValidatedMaterial;
}

const made = new Map<string, Promise<CaSigned>>();

/** One CA per `sans` (openssl subjectAltName syntax) per test file, made on first use. */
export function caSignedMaterial(sans = TEST_CERT_SANS_DEFAULT): Promise<CaSigned> {
  let m = made.get(sans);
  if (m === undefined) {
    m = (async () => {
      const dir = await tempDir('felix-transport-ca-');
      try {
        const ca = await makeTestCa(dir.path, sans);
        return { caPem: ca.caPem, server: validateTlsMaterial(ca) };
      } finally {
        await dir.cleanup();
      }
    })();
    made.set(sans, m);
  }
  return m;
}
