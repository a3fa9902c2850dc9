// Init container of the broker pods (deploy/kubernetes/base/broker-statefulset.yaml), run in the
// broker image: issues this pod's certificate for the internal (broker-to-broker) listener from
// the cluster CA Secret, into an in-memory emptyDir the broker container mounts. The certificate
// names the node id (the pod name) as a DNS SAN, which is what the broker checks both ways: a
// listener checks the node id a peer claims in its Hello, a dialer the listener's name
// (docs/replication.md, "Between brokers"). Only the CA's certificate is copied out; the CA key
// stays in this container, so the broker never holds it. A new key and certificate are made at
// every pod start: a restart rotates them, and a CA rotation takes effect with a roll.
//
//   node issue-internal-cert.mjs --node-id felix-broker-0 --ca-dir /etc/felix/cluster-ca \
//     --out-dir /etc/felix/internal-tls [--dns other.name]... [--days 397]
//
// --ca-dir holds ca.crt and ca.key (PEM; an EC or RSA key); --out-dir receives tls.crt, tls.key
// (PKCS#8) and ca.crt. Exit 2 when the CA is missing or unusable, or an argument is wrong; nothing
// is written then. Signing uses the `selfsigned` package the broker image ships through
// @felix/transport (Node's crypto cannot issue certificates); --selfsigned-from names another
// directory to resolve it from (the tests use the workspace's packages/transport).
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const CERT_DAYS_DEFAULT = 397;
const CERT_DAYS_MAX = 3650;
/** notBefore this far in the past, so a node whose clock lags a little accepts the certificate. */
const BACKDATE_MS = 5 * 60_000;
const DAY_MS = 86_400_000;
const TRANSPORT_DIR_DEFAULT = '/app/node_modules/@felix/transport';
/** A DNS label: the broker checks the node id with X509Certificate.checkHost, so it must be one. */
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

class Refusal extends Error {}

function options(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      'node-id': { type: 'string' },
      'ca-dir': { type: 'string' },
      'out-dir': { type: 'string' },
      dns: { type: 'string', multiple: true, default: [] },
      days: { type: 'string', default: String(CERT_DAYS_DEFAULT) },
      'selfsigned-from': { type: 'string', default: TRANSPORT_DIR_DEFAULT },
    },
    strict: true,
  });
  for (const name of ['node-id', 'ca-dir', 'out-dir']) {
    if (!values[name]) throw new Refusal(`--${name} is required`);
  }
  const nodeId = values['node-id'];
  if (!DNS_LABEL.test(nodeId)) throw new Refusal(`node id ${nodeId} is not a DNS label`);
  for (const d of values.dns) if (!DNS_NAME.test(d)) throw new Refusal(`${d} is not a DNS name`);
  const days = Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > CERT_DAYS_MAX) {
    throw new Refusal(`--days must be 1..${CERT_DAYS_MAX}, got ${values.days}`);
  }
  return { ...values, nodeId, days };
}

/** The CA's certificate and key, refused unless both exist, it is a CA and the key is its own. */
function readCa(dir) {
  const certPath = join(dir, 'ca.crt');
  const keyPath = join(dir, 'ca.key');
  for (const p of [certPath, keyPath]) {
    if (!existsSync(p)) throw new Refusal(`the cluster CA is missing: no ${p}`);
  }
  const cert = readFileSync(certPath, 'utf8');
  const key = readFileSync(keyPath, 'utf8');
  let x509;
  let privateKey;
  try {
    x509 = new X509Certificate(cert);
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Refusal(`the cluster CA does not parse: ${err.message}`);
  }
  if (!x509.ca) throw new Refusal(`${certPath} is not a CA certificate (basicConstraints CA:TRUE)`);
  const der = (k) => k.export({ type: 'spki', format: 'der' });
  if (!der(createPublicKey(privateKey)).equals(der(x509.publicKey))) {
    throw new Refusal(`${keyPath} is not the key of ${certPath}`);
  }
  const keyType = privateKey.asymmetricKeyType;
  if (keyType !== 'ec' && keyType !== 'rsa') {
    throw new Refusal(`the CA key is ${keyType}; an EC or RSA key is needed`);
  }
  return { cert, key, x509, keyType };
}

async function loadGenerate(fromDir) {
  // pnpm's layout: selfsigned resolves from @felix/transport's real directory only.
  const dir = realpathSync(fromDir);
  const entry = createRequire(join(dir, 'package.json')).resolve('selfsigned');
  return (await import(pathToFileURL(entry).href)).generate;
}

async function issue(o, ca) {
  const generate = await loadGenerate(o['selfsigned-from']);
  const from = Date.now() - BACKDATE_MS;
  const names = [o.nodeId, ...o.dns.filter((d) => d !== o.nodeId)];
  return generate([{ name: 'commonName', value: o.nodeId }], {
    // The leaf takes the CA's key type: the package signs with the leaf's algorithm family.
    ...(ca.keyType === 'ec'
      ? { keyType: 'ec', curve: 'P-256' }
      : { keyType: 'rsa', keySize: 2048 }),
    algorithm: 'sha256',
    notBeforeDate: new Date(from),
    notAfterDate: new Date(from + o.days * DAY_MS),
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      // Both: the same certificate serves the internal listener and dials peers (mutual TLS).
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
      { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
    ],
  });
}

/** Written next to the target and renamed, so the broker never reads half a file. */
function put(dir, name, text, mode) {
  const tmp = join(dir, `.${name}.tmp`);
  writeFileSync(tmp, text.endsWith('\n') ? text : `${text}\n`, { mode });
  renameSync(tmp, join(dir, name));
}

async function main() {
  const o = options(process.argv.slice(2));
  if (!existsSync(o['out-dir'])) throw new Refusal(`--out-dir ${o['out-dir']} does not exist`);
  const ca = readCa(o['ca-dir']);
  const leaf = await issue(o, ca);
  // Check what the broker will check before handing it over.
  const issued = new X509Certificate(leaf.cert);
  if (!issued.verify(ca.x509.publicKey) || issued.checkHost(o.nodeId) === undefined) {
    throw new Error(`the issued certificate does not verify or does not name ${o.nodeId}`);
  }
  put(o['out-dir'], 'tls.key', leaf.private, 0o400);
  put(o['out-dir'], 'tls.crt', leaf.cert, 0o444);
  put(o['out-dir'], 'ca.crt', ca.cert, 0o444);
  console.log(
    `issue-internal-cert: ${o.nodeId} (${issued.subjectAltName}) until ${issued.validTo}, signed by ${ca.x509.subject.replaceAll('\n', ', ')}`,
  );
}

try {
  await main();
} catch (err) {
  console.error(`issue-internal-cert: ${err.message}`);
  process.exit(err instanceof Refusal || err?.code?.startsWith?.('ERR_PARSE_ARGS') ? 2 : 1);
}
