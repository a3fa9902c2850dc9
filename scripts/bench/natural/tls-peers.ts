/**
 * The peers with TLS on, started by the bench itself: Felix has no plaintext transport (every
 * connection is TLS or QUIC), so the judged comparison is against the same peer servers with
 * the same channel security. Each run starts its own
 *
 * - redis-server (this Debian build links libssl): `--port 0 --tls-port <free>` with the bench's
 *   certificate, `--tls-auth-clients no`, no RDB, no AOF (memory only, as the shared server);
 * - nats-server: a `tls {}` block on a free port (every client must speak TLS), JetStream on
 *   with a store under a temporary directory and the server's defaults otherwise.
 *
 * The certificate is the broker's development one (@felix/transport `loadOrCreateDevCertificate`:
 * ECDSA P-256, self-signed, SAN 127.0.0.1), so every system negotiates the same kind of
 * handshake and record cipher. Clients connect with the defaults their README shows plus the one
 * option TLS needs: the CA (`tls: { ca }` for both ioredis and nats.js). Nothing else is tuned.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevCertificate } from '@felix/transport';
import { Redis } from 'ioredis';
import { type NatsConnection, connect as natsConnect } from 'nats';

const START_DEADLINE_MS = 10_000;

export interface TlsPeers {
  /** The CA (the certificate itself: it is self-signed) clients pass as `tls: { ca }`. */
  ca: string;
  redisPort: number;
  natsPort: number;
  /** The nats-server's pid (its CPU from /proc). */
  natsPid: number;
  /** The TLS redis-server's pid. */
  redisPid: number;
  /** A new ioredis client over TLS; the caller disconnects it. */
  redis(): Redis;
  /** A new nats.js connection over TLS; the caller closes it. */
  nats(): Promise<NatsConnection>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

/** Retries `attempt` until it resolves or the start deadline passes (a server is starting). */
async function whenUp<T>(what: string, attempt: () => Promise<T>): Promise<T> {
  const until = Date.now() + START_DEADLINE_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > until) throw new Error(`${what} did not start: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  return exited;
}

export async function startTlsPeers(): Promise<TlsPeers> {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-tls-peers-'));
  const material = await loadOrCreateDevCertificate(dir);
  const cert = join(dir, 'tls', 'cert.pem');
  const key = join(dir, 'tls', 'key.pem');
  // The dev certificate's own file names may change: write the PEMs under names of our own.
  writeFileSync(cert, material.certPem);
  writeFileSync(key, material.keyPem, { mode: 0o600 });
  const redisPort = await freePort();
  const redisServer = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--bind',
      '127.0.0.1',
      '--tls-port',
      String(redisPort),
      '--tls-cert-file',
      cert,
      '--tls-key-file',
      key,
      '--tls-ca-cert-file',
      cert,
      '--tls-auth-clients',
      'no',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const natsPort = await freePort();
  const conf = join(dir, 'nats.conf');
  writeFileSync(
    conf,
    [
      `listen: 127.0.0.1:${natsPort}`,
      `tls { cert_file: "${cert}", key_file: "${key}" }`,
      `jetstream { store_dir: "${join(dir, 'js')}" }`,
      '',
    ].join('\n'),
  );
  // nats-server logs every start to stderr; its failures show as the start deadline's error.
  const natsServer = spawn('nats-server', ['-c', conf], { stdio: 'ignore' });
  // A bench that dies before `stop` must not leave its servers running: kill them as it exits.
  const orphaned = () => {
    redisServer.kill('SIGKILL');
    natsServer.kill('SIGKILL');
  };
  process.once('exit', orphaned);
  const redis = () =>
    new Redis({ host: '127.0.0.1', port: redisPort, tls: { ca: material.certPem } });
  const nats = () =>
    natsConnect({ servers: `127.0.0.1:${natsPort}`, tls: { ca: material.certPem } });
  await whenUp('redis-server (TLS)', async () => {
    const r = new Redis({
      host: '127.0.0.1',
      port: redisPort,
      tls: { ca: material.certPem },
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    r.on('error', () => undefined); // refused while starting: the attempt's own rejection says so
    try {
      await r.connect();
      await r.ping();
    } finally {
      r.disconnect();
    }
  });
  await whenUp('nats-server (TLS)', async () => (await nats()).close());
  return {
    ca: material.certPem,
    redisPort,
    natsPort,
    natsPid: natsServer.pid!,
    redisPid: redisServer.pid!,
    redis,
    nats,
    stop: async () => {
      process.off('exit', orphaned);
      await Promise.all([stopChild(redisServer), stopChild(natsServer)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
