// Goal: the brokers' init container script (deploy/kubernetes/base/issue-internal-cert.mjs)
// issues a certificate the broker's internal listener accepts: signed by the cluster CA, naming
// the node id as a DNS name (what the listener checks against a peer's Hello and a dialer checks
// as the server name), usable both to serve and to dial; and it refuses, writing nothing, when
// the CA is missing or its key is not the CA's.
// Method: make a CA with openssl exactly as deploy/kubernetes/README.md says (EC, and RSA for
// the other key type), run the script as the init container does (with `selfsigned` resolved
// from the workspace's @felix/transport instead of the image's), then check the files with
// node:crypto and complete a mutual TLS handshake between two issued certificates. Without
// openssl the suite skips with a printed reason, except under CI=true, where it fails.
import { spawnSync } from 'node:child_process';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect, createServer } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'deploy/kubernetes/base/issue-internal-cert.mjs');
const TRANSPORT = join(ROOT, 'packages/transport');
const EXIT_REFUSED = 2;

const HAVE_OPENSSL = spawnSync('openssl', ['version'], { encoding: 'utf8' }).status === 0;
const IN_CI = process.env.CI === 'true';
if (!HAVE_OPENSSL) {
  const why = 'openssl is not on PATH, so no cluster CA can be made as the README says';
  console.warn(IN_CI ? `${why}; CI=true: failing` : `skipped: ${why}`);
}

const work = mkdtempSync(join(tmpdir(), 'felix-issue-cert-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function openssl(args: string[]): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

/** A cluster CA made with the README's command, in a fresh directory. */
function makeCa(name: string, key: 'ec' | 'rsa'): string {
  const dir = join(work, name);
  mkdirSync(dir);
  const keyArgs =
    key === 'ec'
      ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']
      : ['-newkey', 'rsa:2048'];
  openssl([
    'req',
    '-x509',
    ...keyArgs,
    '-nodes',
    '-days',
    '3650',
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.crt'),
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return dir;
}

function issue(caDir: string, nodeId: string, extra: string[] = []) {
  const out = mkdtempSync(join(work, 'out-'));
  const r = spawnSync(
    process.execPath,
    [
      SCRIPT,
      '--node-id',
      nodeId,
      '--ca-dir',
      caDir,
      '--out-dir',
      out,
      '--selfsigned-from',
      TRANSPORT,
      ...extra,
    ],
    { encoding: 'utf8' },
  );
  const read = (f: string) => readFileSync(join(out, f), 'utf8');
  return { status: r.status, stderr: r.stderr, out, files: readdirSync(out).sort(), read };
}

/** Server `a` and client `b` handshake as two brokers do; resolves with what each side saw. */
function handshake(ca: string, a: Issued, b: Issued, dialed: string) {
  return new Promise<{ peer: X509Certificate }>((resolve, reject) => {
    const server = createServer(
      {
        cert: a.cert,
        key: a.key,
        ca,
        requestCert: true,
        rejectUnauthorized: true,
        minVersion: 'TLSv1.3',
      },
      (s: TLSSocket) => {
        const peer = new X509Certificate(s.getPeerCertificate().raw);
        s.end();
        server.close();
        resolve({ peer });
      },
    );
    server.on('tlsClientError', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      const c = connect({
        host: '127.0.0.1',
        port,
        servername: dialed,
        ca,
        cert: b.cert,
        key: b.key,
      });
      c.on('error', (err) => {
        server.close();
        reject(err);
      });
      c.on('data', () => {});
    });
  });
}

interface Issued {
  cert: string;
  key: string;
}

/** Issues for two nodes from a CA with a `kind` key and checks what the brokers will check. */
async function expectIssuedCertificates(kind: 'ec' | 'rsa'): Promise<void> {
  const caDir = makeCa(`ca-${kind}`, kind);
  const caPem = readFileSync(join(caDir, 'ca.crt'), 'utf8');
  const ca = new X509Certificate(caPem);
  const fqdn = 'felix-broker-1.felix-broker.felix.svc.cluster.local';
  const one = issue(caDir, 'felix-broker-1', ['--dns', fqdn]);
  expect(one.stderr).toBe('');
  expect(one.status).toBe(0);
  expect(one.files).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
  expect(one.read('ca.crt')).toBe(caPem.endsWith('\n') ? caPem : `${caPem}\n`);
  const cert = new X509Certificate(one.read('tls.crt'));
  expect(cert.verify(ca.publicKey), 'signed by the cluster CA').toBe(true);
  expect(cert.ca).toBe(false);
  expect(cert.subject).toBe('CN=felix-broker-1');
  expect(cert.subjectAltName).toBe(`DNS:felix-broker-1, DNS:${fqdn}`);
  // The listener's check of a Hello (internal-listener.ts): only this node id passes.
  expect(cert.checkHost('felix-broker-1')).toBe('felix-broker-1');
  expect(cert.checkHost('felix-broker-2')).toBeUndefined();
  expect(cert.keyUsage ?? []).toEqual(
    expect.arrayContaining(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']),
  );
  const key = one.read('tls.key');
  expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----/); // PKCS#8, as the broker requires
  const spki = (k: ReturnType<typeof createPublicKey>) => k.export({ type: 'spki', format: 'der' });
  expect(spki(createPublicKey(createPrivateKey(key))).equals(spki(cert.publicKey))).toBe(true);
  // Two issued certificates complete mutual TLS with the CA alone, the dialer checking the
  // server's name as a broker does (servername = the node id it meant).
  const two = issue(caDir, 'felix-broker-2');
  expect(two.status).toBe(0);
  const a = { cert: one.read('tls.crt'), key };
  const b = { cert: two.read('tls.crt'), key: two.read('tls.key') };
  const seen = await handshake(caPem, a, b, 'felix-broker-1');
  expect(seen.peer.checkHost('felix-broker-2')).toBe('felix-broker-2');
  await expect(handshake(caPem, a, b, 'felix-broker-3')).rejects.toThrow(/felix-broker-3/);
}

describe.skipIf(!HAVE_OPENSSL && !IN_CI)('issue-internal-cert.mjs', () => {
  it('the_cert_issuer_signs_a_certificate_naming_the_node_id_with_the_cluster_ca_ec', () =>
    expectIssuedCertificates('ec'));

  it('the_cert_issuer_signs_a_certificate_naming_the_node_id_with_the_cluster_ca_rsa', () =>
    expectIssuedCertificates('rsa'));

  it('the_cert_issuer_refuses_a_missing_cluster_ca_and_writes_nothing', () => {
    const empty = join(work, 'no-ca');
    mkdirSync(empty);
    const none = issue(empty, 'felix-broker-0');
    expect(none.status).toBe(EXIT_REFUSED);
    expect(none.stderr).toContain('the cluster CA is missing');
    expect(none.files).toEqual([]);
    // A Secret holding the certificate without its key is as unusable.
    const half = join(work, 'half-ca');
    mkdirSync(half);
    writeFileSync(join(half, 'ca.crt'), readFileSync(join(makeCa('ca-for-half', 'ec'), 'ca.crt')));
    const r = issue(half, 'felix-broker-0');
    expect(r.status).toBe(EXIT_REFUSED);
    expect(r.stderr).toContain(`no ${join(half, 'ca.key')}`);
    expect(r.files).toEqual([]);
  });

  it('the_cert_issuer_refuses_a_ca_key_that_is_not_the_ca_certificates_own', () => {
    const mixed = makeCa('ca-mixed', 'ec');
    const other = makeCa('ca-other', 'ec');
    writeFileSync(join(mixed, 'ca.key'), readFileSync(join(other, 'ca.key')));
    const r = issue(mixed, 'felix-broker-0');
    expect(r.status).toBe(EXIT_REFUSED);
    expect(r.stderr).toContain('is not the key of');
    expect(r.files).toEqual([]);
  });
});
