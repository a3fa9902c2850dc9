/**
 * Starts the built felix-broker (services/broker/dist/main.js) as a child process for the
 * cache-broker and queue benchmarks: a temp data dir, the given YAML catalog and FELIX_* env,
 * free ports, and the fingerprint from its `listening` line. `stop()` SIGTERMs and removes the
 * data dir.
 */
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The node flags every broker launcher passes (services/broker/node-flags.json says why). */
export function brokerNodeFlags(): string[] {
  const file = resolve(
    import.meta.dirname,
    '..',
    '..',
    '..',
    'services',
    'broker',
    'node-flags.json',
  );
  return (JSON.parse(readFileSync(file, 'utf8')) as { flags: string[] }).flags;
}

const MAIN = resolve(
  import.meta.dirname,
  '..',
  '..',
  '..',
  'services',
  'broker',
  'dist',
  'main.js',
);

export interface BenchBroker {
  url(transport: 'tls' | 'quic'): string;
  fingerprint: string;
  pid: number;
  /** The operator HTTP port (/metrics). */
  httpPort: number;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const tcp = createServer();
    tcp.once('error', fail);
    tcp.listen(0, '127.0.0.1', () => {
      const { port } = tcp.address() as { port: number };
      tcp.close(() => {
        const udp = createSocket('udp4');
        udp.once('error', () => freePort().then(ok, fail));
        udp.bind(port, '127.0.0.1', () => udp.close(() => ok(port)));
      });
    });
  });
}

export async function startBenchBroker(
  yaml: string,
  env: Record<string, string> = {},
): Promise<BenchBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'felix-bench-broker-'));
  writeFileSync(join(dir, 'broker.yaml'), yaml);
  const port = await freePort();
  const httpPort = await freePort();
  // Extra node flags for the broker (e.g. --cpu-prof); FELIX_BENCH_BROKER_ARGS is the name the
  // pubsub bench reads, FELIX_BENCH_BROKER_NODE_ARGS the older one here.
  const nodeArgs = (
    process.env.FELIX_BENCH_BROKER_ARGS ??
    process.env.FELIX_BENCH_BROKER_NODE_ARGS ??
    ''
  )
    .split(' ')
    .filter(Boolean);
  const child = spawn(process.execPath, [...brokerNodeFlags(), ...nodeArgs, MAIN], {
    env: {
      ...process.env,
      FELIX_BROKER_CONFIG: join(dir, 'broker.yaml'),
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: String(port),
      FELIX_BROKER_HTTP_PORT: String(httpPort),
      FELIX_BROKER_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // A benchmark that crashes or times out must not leave its broker behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));
  // The `listening` line carries the dev certificate's fingerprint; stdout keeps draining after.
  const line = await new Promise<{ cert_fingerprint: string }>((ok, fail) => {
    let buf = '';
    const timer = setTimeout(() => fail(new Error('broker did not listen within 30 s')), 30_000);
    child.once('exit', (code) => fail(new Error(`broker exited with ${code}`)));
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const l = buf.split('\n').find((x) => x.includes('"msg":"listening"'));
      if (l !== undefined) {
        clearTimeout(timer);
        ok(JSON.parse(l));
      }
    });
  });
  // FELIX_BENCH_BROKER_STDOUT=path keeps the broker's stdout (say, with --trace-gc in its args).
  const keep = process.env.FELIX_BENCH_BROKER_STDOUT;
  if (keep !== undefined) {
    const out = createWriteStream(keep);
    child.stdout!.pipe(out);
  }
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  return {
    url: (t) => `${t}://127.0.0.1:${port}`,
    fingerprint: line.cert_fingerprint,
    pid: child.pid!,
    httpPort,
    stop: async () => {
      process.off('exit', killOnExit);
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** Runs `op` `n` times one at a time; answers sorted latencies in µs. */
export async function latencies(n: number, op: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    out.push((performance.now() - t) * 1000);
  }
  return out.sort((a, b) => a - b);
}
