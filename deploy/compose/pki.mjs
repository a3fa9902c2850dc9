// One-shot `pki` service of compose.yaml, run in the broker image as root (only to hand files to
// the service user): makes a private CA and one certificate per broker, for its client listeners
// and for its peers on the internal listener (SANs: its service name, which is its node id,
// localhost, 127.0.0.1, ::1) into the `pki` volume, the control plane's bootstrap token into the
// `secrets` volume, and copies the CA certificate to /out for clients on the host. Whatever
// exists is kept, so a second `up` changes nothing. Uses the `selfsigned` package the broker
// image already ships (through @felix/transport).
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const FELIX_UID = 10001;
const CA_DAYS = 825;
const CERT_DAYS = 397;
const BROKERS = (process.env.FELIX_PKI_BROKERS ?? 'broker-1,broker-2,broker-3').split(',');
const PKI = '/pki';
const SECRETS = '/secrets';
const OUT = '/out';
/** The checkout's owner: files copied to the host's out dir are handed to them. */
const hostOwner = statSync(import.meta.filename);

// pnpm's layout: selfsigned is resolvable from @felix/transport's real directory only.
const transportDir = realpathSync('/app/node_modules/@felix/transport');
const { generate } = await import(
  pathToFileURL(createRequire(`${transportDir}/package.json`).resolve('selfsigned')).href
);

const days = (n, from = Date.now() - 60_000) => ({
  notBeforeDate: new Date(from),
  notAfterDate: new Date(from + n * 86_400_000),
});

function put(path, text, mode, uid = FELIX_UID, gid = FELIX_UID) {
  writeFileSync(path, text, { mode });
  chownSync(path, uid, gid);
}

async function makeCa() {
  if (existsSync(`${PKI}/ca.pem`)) return;
  const ca = await generate([{ name: 'commonName', value: 'Felix compose CA' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ...days(CA_DAYS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  put(`${PKI}/ca.key`, ca.private, 0o600, 0, 0);
  put(`${PKI}/ca.pem`, ca.cert, 0o644);
  console.log('pki: made the CA');
}

async function makeBrokerCert(name, ca) {
  if (existsSync(`${PKI}/${name}.pem`)) return;
  const cert = await generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ...days(CERT_DAYS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      // clientAuth too: the same certificate dials peers on the internal listener (mutual TLS).
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: name },
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  put(`${PKI}/${name}.key`, cert.private, 0o600);
  put(`${PKI}/${name}.pem`, `${cert.cert.trim()}\n`, 0o644);
  console.log(`pki: made the certificate of ${name}`);
}

function makeBootstrapToken() {
  const path = `${SECRETS}/bootstrap.token`;
  if (existsSync(path)) return;
  put(path, randomBytes(32).toString('hex'), 0o600);
  console.log('pki: made the bootstrap token');
}

mkdirSync(OUT, { recursive: true });
await makeCa();
const ca = {
  key: await readFile(`${PKI}/ca.key`, 'utf8'),
  cert: await readFile(`${PKI}/ca.pem`, 'utf8'),
};
for (const name of BROKERS) await makeBrokerCert(name, ca);
makeBootstrapToken();
put(`${OUT}/ca.pem`, ca.cert, 0o644, hostOwner.uid, hostOwner.gid);
console.log(`pki: done; clients trust ${OUT}/ca.pem`);
