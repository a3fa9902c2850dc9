/**
 * Starts the built felix-broker (services/broker/dist/main.js) as a child process, the way every
 * bench runs it: the node flags of services/broker/node-flags.json, a temp data dir holding the
 * given YAML catalog, ports picked by the broker (port 0), and the fingerprint and ports from its
 * `listening` line. It spawns the process and never imports the broker.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertFreshBuild } from './build.js';
import { BrokerStartError } from './errors.js';
import { BROKER_LISTEN_DEADLINE_MS, BROKER_LISTEN_SCAN_BYTES_MAX } from './limits.js';

/** This checkout's root (the kit runs from packages/testing/bench-kit/{src,dist}). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..', '..', '..');

export interface BrokerOptions {
  /** The broker's YAML catalog (FELIX_BROKER_CONFIG). */
  config: string;
  /** FELIX_* settings on top of the launcher's (they win). */
  env?: Record<string, string>;
  /** Extra node flags (say `--cpu-prof`); default FELIX_BENCH_BROKER_ARGS (or the older
   *  FELIX_BENCH_BROKER_NODE_ARGS), split at spaces. */
  nodeArgs?: string[];
  /** The checkout whose built broker runs (an A/B bench starts two); default this one. */
  root?: string;
  /** Keep the broker's stdout in this file; default FELIX_BENCH_BROKER_STDOUT. */
  stdoutPath?: string;
}

export interface BenchBroker {
  pid: number;
  /** TCP port of the TLS listener; QUIC shares the number over UDP. */
  port: number;
  /** The operator HTTP port (/metrics). */
  httpPort: number;
  /** SHA-256 of the development certificate, for `tls: { fingerprint }`. */
  fingerprint: string;
  url(transport: 'tls' | 'quic'): string;
  /** The broker's Prometheus text. */
  metricsText(): Promise<string>;
  /** SIGTERM, wait for the exit, remove the data dir. */
  stop(): Promise<void>;
}

/** The node flags every broker launcher passes (services/broker/node-flags.json says why). */
export function brokerNodeFlags(root = REPO_ROOT): string[] {
  const file = join(root, 'services', 'broker', 'node-flags.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { flags: string[] }).flags;
}

/** Node flags for the broker named in the environment (FELIX_BENCH_BROKER_ARGS). */
export function brokerArgsFromEnv(): string[] {
  const env = process.env;
  return (env.FELIX_BENCH_BROKER_ARGS ?? env.FELIX_BENCH_BROKER_NODE_ARGS ?? '')
    .split(' ')
    .filter((a) => a !== '');
}

interface ListeningLine {
  tls_port: number;
  http_port: number;
  cert_fingerprint: string;
}

export async function startBroker(options: BrokerOptions): Promise<BenchBroker> {
  const root = options.root ?? REPO_ROOT;
  const main = join(root, 'services', 'broker', 'dist', 'main.js');
  assertFreshBuild(main);
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-broker-'));
  writeFileSync(join(dir, 'broker.yaml'), options.config);
  const nodeArgs = options.nodeArgs ?? brokerArgsFromEnv();
  const child = spawn(process.execPath, [...brokerNodeFlags(root), ...nodeArgs, main], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: join(dir, 'broker.yaml'),
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: '0',
      FELIX_BROKER_HTTP_PORT: '0',
      FELIX_BROKER_LOG_LEVEL: 'info',
      // Explicit dev mode (tokens accepted as given): a bench measures the data path; the authz
      // bench passes real keys (FELIX_AUTH_MODE=tokens, FELIX_AUTH_KEYS_FILE) to measure auth on.
      FELIX_AUTH_MODE: 'dev',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // A bench that crashes or is interrupted must not leave its broker behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  let line: ListeningLine;
  let seen: string;
  try {
    ({ line, seen } = await listening(child));
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const keep = options.stdoutPath ?? process.env.FELIX_BENCH_BROKER_STDOUT;
  if (keep !== undefined && keep !== '') {
    const out = createWriteStream(keep);
    out.write(seen); // the lines up to `listening` too
    child.stdout!.pipe(out);
  } else child.stdout!.resume(); // keep draining, so the broker never blocks on a full pipe
  const port = line.tls_port;
  return {
    pid: child.pid!,
    port,
    httpPort: line.http_port,
    fingerprint: line.cert_fingerprint,
    url: (t) => `${t}://127.0.0.1:${port}`,
    metricsText: async () => (await fetch(`http://127.0.0.1:${line.http_port}/metrics`)).text(),
    stop: async () => {
      process.off('exit', killOnExit);
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves with the broker's `listening` log line (and the output up to it); fails if the
 *  broker exits or stays silent. */
function listening(child: ChildProcess): Promise<{ line: ListeningLine; seen: string }> {
  return new Promise((ok, fail) => {
    let buf = '';
    const done = (err: Error | null, line?: ListeningLine) => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      if (err) fail(err);
      else ok({ line: line!, seen: buf });
    };
    const timer = setTimeout(
      () => done(new BrokerStartError(`no listening line within ${BROKER_LISTEN_DEADLINE_MS} ms`)),
      BROKER_LISTEN_DEADLINE_MS,
    );
    const onExit = (code: number | null) => done(new BrokerStartError(`exited with ${code}`));
    const onData = (c: Buffer) => {
      buf += c.toString();
      const l = buf.split('\n').find((x) => x.includes('"msg":"listening"'));
      if (l !== undefined && buf.slice(buf.indexOf(l) + l.length).includes('\n')) {
        done(null, JSON.parse(l) as ListeningLine);
      } else if (buf.length > BROKER_LISTEN_SCAN_BYTES_MAX) {
        done(new BrokerStartError(`${buf.length} bytes of output and no listening line`));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}
