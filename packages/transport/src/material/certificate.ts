/**
 * TLS material: validation at start (so a bad key never reaches a handshake), SHA-256
 * fingerprints, PEM files, and the self-signed development certificate kept under a data dir.
 */
import { X509Certificate, createPrivateKey, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BadTlsMaterialError } from '../errors.js';
import type { TlsMaterial } from '../types.js';

export interface ValidatedMaterial extends TlsMaterial {
  /** SHA-256 of the DER certificate, uppercase hex pairs joined by colons. */
  fingerprint: string;
}

/** Checks that the certificate parses, is in date, and matches an unencrypted PKCS#8 key. */
export function validateTlsMaterial(m: TlsMaterial): ValidatedMaterial {
  if (typeof m.certPem !== 'string' || !m.certPem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new BadTlsMaterialError(
      'TLS certificate is not a PEM certificate (want -----BEGIN CERTIFICATE-----)',
    );
  }
  if (typeof m.keyPem !== 'string' || !m.keyPem.includes('-----BEGIN')) {
    throw new BadTlsMaterialError('TLS key is not a PEM key (want -----BEGIN PRIVATE KEY-----)');
  }
  if (m.keyPem.includes('ENCRYPTED')) {
    throw new BadTlsMaterialError(
      'TLS key is encrypted; give an unencrypted PKCS#8 key (openssl pkcs8 -topk8 -nocrypt)',
    );
  }
  if (!m.keyPem.includes('-----BEGIN PRIVATE KEY-----')) {
    throw new BadTlsMaterialError(
      'TLS key is not PKCS#8 (-----BEGIN PRIVATE KEY-----); convert it with openssl pkcs8 -topk8 -nocrypt',
    );
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(m.certPem);
  } catch (err) {
    throw new BadTlsMaterialError('TLS certificate does not parse', { cause: err });
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey({ key: m.keyPem, format: 'pem' });
  } catch (err) {
    throw new BadTlsMaterialError('TLS key does not parse', { cause: err });
  }
  if (!cert.checkPrivateKey(key)) {
    throw new BadTlsMaterialError(
      `TLS key does not match the certificate (subject ${cert.subject.replace(/\n/g, ', ')})`,
    );
  }
  const now = Date.now();
  if (Date.parse(cert.validTo) < now) {
    throw new BadTlsMaterialError(`TLS certificate expired on ${cert.validTo}`);
  }
  if (Date.parse(cert.validFrom) > now) {
    throw new BadTlsMaterialError(`TLS certificate is not valid before ${cert.validFrom}`);
  }
  return { certPem: m.certPem, keyPem: m.keyPem, fingerprint: cert.fingerprint256 };
}

/** Reads a certificate and key from PEM files and validates them. */
export async function loadTlsFiles(certPath: string, keyPath: string): Promise<ValidatedMaterial> {
  let certPem: string;
  let keyPem: string;
  try {
    [certPem, keyPem] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
  } catch (err) {
    throw new BadTlsMaterialError(`cannot read TLS files ${certPath}, ${keyPath}`, { cause: err });
  }
  return validateTlsMaterial({ certPem, keyPem });
}

/** Lowercase hex without separators or a `sha256:` prefix; throws on anything else. */
export function normalizeFingerprint(fp: string): string {
  const hex = fp
    .trim()
    .replace(/^sha256:/i, '')
    .replace(/:/g, '')
    .toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new BadTlsMaterialError(`fingerprint ${JSON.stringify(fp)} is not a SHA-256 hex digest`);
  }
  return hex;
}

export function fingerprintsEqual(a: string, b: string): boolean {
  const x = Buffer.from(normalizeFingerprint(a), 'hex');
  const y = Buffer.from(normalizeFingerprint(b), 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

const DEV_CERT_FILE = 'dev-cert.pem';
const DEV_KEY_FILE = 'dev-key.pem';
const DEV_FINGERPRINT_FILE = 'dev-cert.sha256';
const DEV_CERT_DAYS = 825;

/**
 * Loads the development certificate from `<dataDir>/tls/`, creating a self-signed one (EC P-256,
 * SANs localhost, 127.0.0.1, ::1) on first use. The fingerprint is written beside it so clients
 * can pin it.
 */
export async function loadOrCreateDevCertificate(dataDir: string): Promise<ValidatedMaterial> {
  const dir = join(dataDir, 'tls');
  const certPath = join(dir, DEV_CERT_FILE);
  const keyPath = join(dir, DEV_KEY_FILE);
  const existing = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]).catch(
    () => null,
  );
  if (existing) return validateTlsMaterial({ certPem: existing[0], keyPem: existing[1] });

  // Loaded here, not at import: the generator and its X.509 library cost every process that
  // imports the transport about 150 ms, and only a first start without a certificate needs them.
  const selfsigned = await import('selfsigned');
  // Node names a CommonJS module's exports; a bundle (the broker's dist) may hand over only its
  // default export.
  const generate =
    selfsigned.generate ??
    (selfsigned as unknown as { default: typeof selfsigned }).default.generate;
  const notBeforeDate = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: 'felix-dev' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + DEV_CERT_DAYS * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  const material = validateTlsMaterial({ certPem: pems.cert, keyPem: pems.private });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Write-then-rename so a crash never leaves a half-written key that fails every later start.
  await writeFile(`${keyPath}.tmp`, material.keyPem, { mode: 0o600 });
  await writeFile(`${certPath}.tmp`, material.certPem, { mode: 0o644 });
  await rename(`${keyPath}.tmp`, keyPath);
  await rename(`${certPath}.tmp`, certPath);
  await writeFile(join(dir, DEV_FINGERPRINT_FILE), `${material.fingerprint}\n`);
  return material;
}

/** The certificate a dialer presents to a listener that requires one (mutual TLS), checked
 *  first, as both transports' TLS configs take it. */
export function presentedCertificate(m: TlsMaterial | undefined): { cert?: string; key?: string } {
  if (m === undefined) return {};
  const v = validateTlsMaterial(m);
  return { cert: v.certPem, key: v.keyPem };
}
