/**
 * A local three-server NATS JetStream cluster on loopback: the peer a Felix user running a
 * replicated log would pick instead. Each server has its own client port, route port and store
 * directory; routes name all three, so the cluster forms whichever starts first. The bench talks
 * to it with nats.js and kills servers by pid (SIGKILL, the same fault Felix's leader gets).
 * With `tls` (the default of the replicated bench) clients and routes speak TLS, as Felix's
 * clients and brokers do: a `tls {}` block on the client port and one in the cluster block, every
 * server presenting the same certificate, which is its own CA (the broker's development one).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitFor } from '@felix/testing-harness';
import { type NatsConnection, connect } from 'nats';

/** How long a server may take to accept clients, and the cluster to elect its meta leader. */
export const NATS_CLUSTER_FORM_DEADLINE_MS = 30_000;
/** How long a killed server may take to be reaped. */
export const NATS_SERVER_EXIT_DEADLINE_MS = 5_000;

export interface NatsServer {
  name: string;
  port: number;
  url: string;
  proc: ChildProcess | undefined;
}

/** PEMs of a self-signed certificate naming 127.0.0.1, used as its own CA. */
export interface NatsTls {
  certPem: string;
  keyPem: string;
}

export interface NatsCluster {
  servers: NatsServer[];
  /** Whether clients and routes speak TLS. */
  tls: boolean;
  /** The CA clients pass as `tls: { ca }` (undefined without TLS). */
  ca: string | undefined;
  /** A connection to every server (nats.js fails over between them). */
  connect(): Promise<NatsConnection>;
  kill(name: string): Promise<void>;
  /** SIGSTOPs `name` (a server that stopped answering; `stop` still kills it). */
  pause(name: string): Promise<void>;
  stop(): Promise<void>;
}

function serverConfig(
  name: string,
  port: number,
  routePort: number,
  routes: number[],
  dir: string,
  tls: { cert: string; key: string } | undefined,
) {
  const block =
    tls && `tls { cert_file: "${tls.cert}", key_file: "${tls.key}", ca_file: "${tls.cert}" }`;
  return [
    `server_name: ${name}`,
    'host: 127.0.0.1',
    `port: ${port}`,
    ...(block ? [block] : []),
    `jetstream { store_dir: "${join(dir, name)}" }`,
    'cluster {',
    '  name: felix-bench',
    `  listen: 127.0.0.1:${routePort}`,
    ...(block ? [`  ${block}`] : []),
    `  routes: [${routes.map((p) => `nats-route://127.0.0.1:${p}`).join(', ')}]`,
    '}',
    '',
  ].join('\n');
}

/** Starts three servers in `dir` and waits until JetStream answers in the cluster. */
export async function startNatsCluster(
  dir: string,
  tls?: NatsTls,
  binary = 'nats-server',
): Promise<NatsCluster> {
  mkdirSync(dir, { recursive: true });
  let files: { cert: string; key: string } | undefined;
  if (tls !== undefined) {
    files = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
    writeFileSync(files.cert, tls.certPem);
    writeFileSync(files.key, tls.keyPem, { mode: 0o600 });
  }
  const ports = [await freePort(), await freePort(), await freePort()];
  const routePorts = [await freePort(), await freePort(), await freePort()];
  const servers: NatsServer[] = ports.map((port, i) => ({
    name: `js${i + 1}`,
    port,
    url: `nats://127.0.0.1:${port}`,
    proc: undefined,
  }));
  for (const [i, s] of servers.entries()) {
    const file = join(dir, `${s.name}.conf`);
    writeFileSync(file, serverConfig(s.name, s.port, routePorts[i]!, routePorts, dir, files));
    s.proc = spawn(binary, ['-c', file], { stdio: 'ignore' });
  }
  const cluster: NatsCluster = {
    servers,
    tls: tls !== undefined,
    ca: tls?.certPem,
    connect: () =>
      connect({
        servers: servers.map((s) => s.url),
        ...(tls === undefined ? {} : { tls: { ca: tls.certPem } }),
      }),
    async kill(name) {
      const s = servers.find((x) => x.name === name);
      const proc = s?.proc;
      if (proc === undefined || proc.exitCode !== null) return;
      const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGKILL');
      await waitFor(() => gone.then(() => true), `${name} to exit`, NATS_SERVER_EXIT_DEADLINE_MS);
      s!.proc = undefined;
    },
    async pause(name) {
      servers.find((x) => x.name === name)?.proc?.kill('SIGSTOP');
    },
    async stop() {
      await Promise.all(servers.map((s) => cluster.kill(s.name)));
    },
  };
  try {
    await waitFor(
      async () => {
        // Refused while the servers start: asked again until the deadline.
        const nc = await cluster.connect().catch(() => undefined);
        if (nc === undefined) return false;
        try {
          const info = await (await nc.jetstreamManager()).getAccountInfo();
          return info !== undefined;
        } catch {
          // No meta leader yet: the cluster is still forming.
          return false;
        } finally {
          await nc.close();
        }
      },
      'the JetStream cluster to elect its meta leader',
      NATS_CLUSTER_FORM_DEADLINE_MS,
    );
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
