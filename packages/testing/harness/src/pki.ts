/**
 * A test CA and one certificate it signed (EC P-256, by default for localhost, 127.0.0.1, ::1),
 * for tests that verify a server by its CA rather than by a pinned fingerprint. Made with the
 * openssl command line: node:crypto cannot issue certificates.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TestPkiError } from './errors.js';
import { OPENSSL_COMMAND_DEADLINE_MS, TEST_CERT_DAYS } from './limits.js';

export interface TestCa {
  /** The CA certificate (PEM): what a client verifying by CA is given. */
  caPem: string;
  caPath: string;
  /** The CA-signed leaf certificate and its unencrypted PKCS#8 key. */
  certPem: string;
  keyPem: string;
  certPath: string;
  keyPath: string;
}

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { timeout: OPENSSL_COMMAND_DEADLINE_MS }, (err, _out, stderr) => {
      if (!err) return resolve();
      const why =
        (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'openssl is not installed' : stderr;
      reject(new TestPkiError(`openssl ${args[0]} failed: ${why}`, { cause: err }));
    });
  });
}

const ecKey = (out: string) =>
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out]);

async function makeCa(dir: string): Promise<void> {
  await ecKey(join(dir, 'ca.key'));
  await openssl([
    ...['req', '-x509', '-new', '-key', join(dir, 'ca.key'), '-sha256'],
    ...['-days', String(TEST_CERT_DAYS), '-subj', '/CN=felix-test-ca'],
    ...['-addext', 'basicConstraints=critical,CA:TRUE'],
    ...['-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    ...['-out', join(dir, 'ca.pem')],
  ]);
}

/** What the leaf certificate is valid for unless a test says otherwise. */
export const TEST_CERT_SANS_DEFAULT = 'DNS:localhost,IP:127.0.0.1,IP:::1';

async function issueLeaf(dir: string, sans: string, name = 'server'): Promise<void> {
  const file = (ext: string) => join(dir, `${name}.${ext}`);
  await ecKey(file('key'));
  await openssl([
    ...['req', '-new', '-key', file('key'), '-subj', `/CN=felix-test-${name}`],
    ...['-out', file('csr')],
  ]);
  await writeFile(
    file('ext'),
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth,clientAuth',
      `subjectAltName=${sans}`,
      '',
    ].join('\n'),
  );
  await openssl([
    ...['x509', '-req', '-in', file('csr')],
    ...['-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key')],
    // A random serial: no serial file shared between calls.
    ...['-set_serial', `0x${randomBytes(16).toString('hex')}`],
    ...['-days', String(TEST_CERT_DAYS), '-sha256'],
    ...['-extfile', file('ext'), '-out', file('pem')],
  ]);
}

/**
 * Makes `<dir>/ca.{pem,key}` and `<dir>/server.{pem,key}` (signed by that CA), the leaf valid
 * for `sans` (openssl subjectAltName syntax).
 */
export async function makeTestCa(dir: string, sans = TEST_CERT_SANS_DEFAULT): Promise<TestCa> {
  await makeCa(dir);
  await issueLeaf(dir, sans);
  const caPath = join(dir, 'ca.pem');
  const certPath = join(dir, 'server.pem');
  const keyPath = join(dir, 'server.key');
  const [caPem, certPem, keyPem] = await Promise.all([
    readFile(caPath, 'utf8'),
    readFile(certPath, 'utf8'),
    readFile(keyPath, 'utf8'),
  ]);
  return { caPem, caPath, certPem, keyPem, certPath, keyPath };
}

/**
 * Issues one more certificate from the CA `makeTestCa` made in `dir`: `<dir>/<name>.{pem,key}`,
 * valid for `sans` (openssl subjectAltName syntax), for server and client use (mutual TLS).
 */
export async function issueTestCert(
  dir: string,
  name: string,
  sans: string,
): Promise<{ certPem: string; keyPem: string }> {
  await issueLeaf(dir, sans, name);
  const [certPem, keyPem] = await Promise.all([
    readFile(join(dir, `${name}.pem`), 'utf8'),
    readFile(join(dir, `${name}.key`), 'utf8'),
  ]);
  return { certPem, keyPem };
}
