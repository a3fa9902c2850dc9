/**
 * The cluster's PKI: one CA per cluster and one certificate per broker signed by it (EC P-256,
 * SANs localhost, 127.0.0.1, ::1), as a production deployment has; clients verify every broker by
 * the CA alone (over QUIC too since vendor patches 9 and 10). Made with the openssl command line:
 * node:crypto cannot issue certificates and the package takes no new npm dependency.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PkiError } from '../errors.js';
import { PKI_CERT_DAYS, PKI_COMMAND_DEADLINE_MS, scaled } from '../limits.js';

export interface NodeTls {
  certPath: string;
  keyPath: string;
}

export interface ClusterPki {
  /** The CA certificate (PEM) that signed every broker's certificate. */
  caPem: string;
  caPath: string;
  /** Issues a certificate naming `name` (`<dir>/pki/<file>.{pem,key}`, `file` = `name` unless
   *  given: a second certificate of one name must not overwrite the broker's). */
  issue(name: string, file?: string): Promise<NodeTls>;
}

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { timeout: scaled(PKI_COMMAND_DEADLINE_MS) }, (err, _out, stderr) => {
      if (err) {
        const why =
          (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'openssl is not installed' : stderr;
        reject(new PkiError(`openssl ${args[0]} failed: ${why}`, { cause: err }));
      } else {
        resolve();
      }
    });
  });
}

const ecKey = (out: string) =>
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out]);

/** Issues `<pkiDir>/<file>.{pem,key}` naming `name`, signed by the CA in `pkiDir`. */
async function issue(pkiDir: string, name: string, file = name): Promise<NodeTls> {
  const keyPath = join(pkiDir, `${file}.key`);
  const csrPath = join(pkiDir, `${file}.csr`);
  const extPath = join(pkiDir, `${file}.ext`);
  const certPath = join(pkiDir, `${file}.pem`);
  await ecKey(keyPath);
  await openssl(['req', '-new', '-key', keyPath, '-subj', `/CN=${name}`, '-out', csrPath]);
  await writeFile(
    extPath,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth,clientAuth',
      // The node id too: brokers know each other by it on the internal network (mutual TLS).
      `subjectAltName=DNS:localhost,DNS:${name},IP:127.0.0.1,IP:::1`,
      '',
    ].join('\n'),
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    csrPath,
    '-CA',
    join(pkiDir, 'ca.pem'),
    '-CAkey',
    join(pkiDir, 'ca.key'),
    // A random serial: no serial file shared between calls.
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    String(PKI_CERT_DAYS),
    '-sha256',
    '-extfile',
    extPath,
    '-out',
    certPath,
  ]);
  return { certPath, keyPath };
}

/** Makes the CA under `<dir>/pki`; brokers' certificates are issued from it by name. */
export async function makeClusterPki(dir: string): Promise<ClusterPki> {
  const pkiDir = join(dir, 'pki');
  await mkdir(pkiDir, { recursive: true });
  const caKey = join(pkiDir, 'ca.key');
  const caPath = join(pkiDir, 'ca.pem');
  await ecKey(caKey);
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    caKey,
    '-sha256',
    '-days',
    String(PKI_CERT_DAYS),
    '-subj',
    '/CN=felix-test-cluster-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    caPath,
  ]);
  return {
    caPem: await readFile(caPath, 'utf8'),
    caPath,
    issue: (name, file) => issue(pkiDir, name, file),
  };
}
