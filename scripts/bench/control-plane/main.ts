/**
 * Control-plane benchmark: 1,000 simulated brokers register and heartbeat every second against a
 * real felix-controlplane process, on SQLite and on Postgres. Reports requests/s, p50/p99 and
 * the server's CPU per phase, the change-feed wake latency (write to long-poll answer, measured
 * while the heartbeats run), and the time to create 10,000 streams and to have them all placed.
 *
 *   npx pnpm@10.34.9 exec tsx scripts/bench/control-plane/main.ts [--backends sqlite,postgres]
 *     [--brokers 1000] [--heartbeat-seconds 15] [--streams 10000] [--wake-samples 50]
 *
 * Bounded in time: each phase has a cap and the whole run stops at --deadline-seconds (600).
 * Builds @felix/control-plane first when its dist is missing.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  markdownTable,
  percentile as pct,
  procCpuSecs as cpuSeconds,
} from '@felix/testing-bench-kit';

const ROOT = resolve(import.meta.dirname, '../../..');
const CP_DIR = join(ROOT, 'services/control-plane');
const MAIN = join(CP_DIR, 'dist/main.js');
const POSTGRES_URL =
  process.env.FELIX_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Args {
  backends: ('sqlite' | 'postgres')[];
  brokers: number;
  heartbeatSeconds: number;
  streams: number;
  wakeSamples: number;
  deadlineSeconds: number;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string, fallback: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : fallback;
  };
  return {
    backends: get('backends', 'sqlite,postgres').split(',') as Args['backends'],
    brokers: Number(get('brokers', '1000')),
    heartbeatSeconds: Number(get('heartbeat-seconds', '15')),
    streams: Number(get('streams', '10000')),
    wakeSamples: Number(get('wake-samples', '50')),
    deadlineSeconds: Number(get('deadline-seconds', '600')),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const fmt = (ms: number) => (Number.isNaN(ms) ? '-' : ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

class Client {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  /** Control-plane tokens: the operator's (cluster routes) and each tenant admin's. */
  readonly tokens = { operator: '', tenants: new Map<string, string>() };
  constructor(private readonly base: URL) {}

  private tokenFor(path: string): string {
    const t = /^\/v1\/tenants\/([^/]+)\//.exec(path)?.[1];
    return (t === undefined ? undefined : this.tokens.tenants.get(t)) ?? this.tokens.operator;
  }

  request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; ms: number }> {
    const start = performance.now();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolvePromise, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          host: this.base.hostname,
          port: this.base.port,
          method,
          path,
          headers: {
            authorization: `Bearer ${this.tokenFor(path)}`,
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown = text;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              // metrics and other text bodies stay strings
            }
            resolvePromise({ status: res.statusCode ?? 0, json, ms: performance.now() - start });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

async function pool<T>(
  items: T[],
  concurrency: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

interface Server {
  child: ChildProcess;
  url: URL;
  /** The bootstrap listener (dev tokens on), guarded by `bootToken`. */
  bootUrl: URL;
  bootToken: string;
  stop(): Promise<void>;
}

/**
 * Initializes `tenant` through the bootstrap listener (operator rights when `operator`) and
 * mints its admin's control-plane token. Every simulated broker uses the operator's token: its
 * `node.manage:cluster:*` covers every node, and one token verifies once (the guard caches it).
 */
async function bootstrapToken(server: Server, tenant: string, operator: boolean): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(
      new URL(`/internal/bootstrap/tenants/${tenant}/${path}`, server.bootUrl),
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-felix-bootstrap-token': server.bootToken,
        },
        body: JSON.stringify(body),
      },
    );
    if (res.status >= 400) throw new Error(`bootstrap ${tenant} ${path}: ${res.status}`);
    return (await res.json()) as { token: string };
  };
  await post('initialize', { initial_admin_principals: ['bench'], operator });
  const permissions = operator
    ? ['tenant.manage:cluster:*', 'node.view:cluster:*', 'node.manage:cluster:*']
    : [`tenant.manage:tenant:${tenant}`];
  return (
    await post('dev-token', { principal: 'bench', permissions, audience: 'felix-controlplane' })
  ).token;
}

async function startServer(
  backend: 'sqlite' | 'postgres',
  schema: string,
  dataDir: string,
): Promise<Server> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const bootPort = port + 1;
  const bootToken = randomBytes(24).toString('hex');
  const env: NodeJS.ProcessEnv = {
    FELIX_BOOTSTRAP_ENABLED: 'true',
    FELIX_BOOTSTRAP_BIND_ADDR: `127.0.0.1:${bootPort}`,
    FELIX_BOOTSTRAP_TOKEN: bootToken,
    FELIX_BOOTSTRAP_DEV_TOKENS: 'true',
    ...process.env,
    FELIX_CONTROLPLANE_BIND: `127.0.0.1:${port}`,
    FELIX_CONTROLPLANE_DATA_DIR: dataDir,
    FELIX_CONTROLPLANE_LOG_LEVEL: 'warn',
    FELIX_CONTROLPLANE_HEARTBEAT_INTERVAL_MS: '1000',
    FELIX_CONTROLPLANE_POSTGRES_URL: backend === 'postgres' ? POSTGRES_URL : '',
    FELIX_CONTROLPLANE_POSTGRES_SCHEMA: backend === 'postgres' ? schema : '',
  };
  const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => {
    out = (out + c).slice(-100_000);
  });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    err = (err + c).slice(-100_000);
  });
  const until = Date.now() + 30_000;
  while (!out.includes('"event":"listening"')) {
    if (child.exitCode !== null || Date.now() > until)
      throw new Error(`control plane did not start: ${err}`);
    await sleep(50);
  }
  return {
    child,
    url: new URL(`http://127.0.0.1:${port}`),
    bootUrl: new URL(`http://127.0.0.1:${bootPort}`),
    bootToken,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

interface Row {
  backend: string;
  phase: string;
  requests: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
  cpu: number;
  /** Server-side p50/p99 from the request-time histogram (upper bucket bound, ms). */
  serverP50?: number;
  serverP99?: number;
  note?: string;
}

const HEARTBEAT_ROUTE = '/v1/nodes/:node_id/heartbeat';
const REGISTER_ROUTE = '/v1/nodes';
const STREAMS_ROUTE = '/v1/tenants/:tenant_id/namespaces/:namespace/streams';

type Buckets = Map<string, Map<number, number>>;

/** Cumulative request-time buckets per route, from the server's /metrics. */
function parseBuckets(text: string): Buckets {
  const out: Buckets = new Map();
  const re = /^felix_controlplane_http_request_seconds_bucket\{([^}]*)\} (\d+)/gm;
  for (const m of text.matchAll(re)) {
    const labels = new Map([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    const routeName = labels.get('route');
    const leText = labels.get('le');
    if (routeName === undefined || leText === undefined) continue;
    const le = leText === '+Inf' ? Number.POSITIVE_INFINITY : Number(leText);
    let route = out.get(routeName);
    if (!route) out.set(routeName, (route = new Map()));
    route.set(le, Number(m[2]));
  }
  return out;
}

/** The upper bound (ms) of the bucket holding quantile `q` of the requests between two scrapes. */
function serverQuantile(before: Buckets, after: Buckets, route: string, q: number): number {
  const a = after.get(route);
  if (!a) return Number.NaN;
  const b = before.get(route) ?? new Map<number, number>();
  const les = [...a.keys()].sort((x, y) => x - y);
  const total = (a.get(Number.POSITIVE_INFINITY) ?? 0) - (b.get(Number.POSITIVE_INFINITY) ?? 0);
  if (total <= 0) return Number.NaN;
  for (const le of les) {
    if ((a.get(le) ?? 0) - (b.get(le) ?? 0) >= q * total) return le * 1000;
  }
  return Number.NaN;
}

async function runBackend(
  backend: 'sqlite' | 'postgres',
  args: Args,
  deadline: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  const schema = `felix_cp_bench_${randomBytes(4).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'felix-cp-bench-'));
  const server = await startServer(backend, schema, dataDir);
  const pid = server.child.pid!;
  const client = new Client(server.url);
  client.tokens.operator = await bootstrapToken(server, 'operator', true);
  // Heartbeat latencies recorded since the last take (filled once the brokers start beating).
  let takeHeartbeats: (() => { lat: number[]; errors: number; note: string }) | undefined;
  const scrape = async () => parseBuckets(String((await client.request('GET', '/metrics')).json));
  const row = (
    name: string,
    r: { lat: number[]; errors: number; note?: string },
    seconds: number,
    cpu: number,
    server?: { before: Buckets; after: Buckets; route: string },
  ) => {
    const sorted = [...r.lat].sort((x, y) => x - y);
    const out: Row = {
      backend,
      phase: name,
      requests: r.lat.length,
      errors: r.errors,
      seconds,
      p50: pct(sorted, 50),
      p99: pct(sorted, 99),
      cpu,
      serverP50: server
        ? serverQuantile(server.before, server.after, server.route, 0.5)
        : Number.NaN,
      serverP99: server
        ? serverQuantile(server.before, server.after, server.route, 0.99)
        : Number.NaN,
      note: r.note,
    };
    rows.push(out);
    process.stderr.write(`${JSON.stringify(out)}\n`);
  };
  /** Runs one phase; rows for its own requests (if any) and for the heartbeats during it. */
  const phase = async (
    name: string,
    route: string | undefined,
    body: () => Promise<{ lat: number[]; errors: number; note?: string }>,
  ) => {
    takeHeartbeats?.();
    const before = await scrape();
    const cpu0 = cpuSeconds(pid);
    const t0 = performance.now();
    const r = await body();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = (cpuSeconds(pid) - cpu0) / seconds;
    const after = await scrape();
    if (r.lat.length > 0 || r.note) {
      row(name, r, seconds, cpu, route ? { before, after, route } : undefined);
    }
    if (takeHeartbeats) {
      row(`heartbeats during: ${name}`, takeHeartbeats(), seconds, cpu, {
        before,
        after,
        route: HEARTBEAT_ROUTE,
      });
    }
  };

  try {
    const ids = Array.from(
      { length: args.brokers },
      (_, i) => `broker-${String(i).padStart(4, '0')}`,
    );
    await phase('register', REGISTER_ROUTE, async () => {
      const lat: number[] = [];
      let errors = 0;
      await pool(ids, 64, async (id) => {
        const r = await client.request('POST', '/v1/nodes', {
          node_id: id,
          advertise_addr: `${id}.internal:5001`,
          client_addr: `${id}.client:5000`,
          zone: `zone-${Number(id.slice(7)) % 3}`,
          incarnation: 1,
        });
        lat.push(r.ms);
        if (r.status !== 200) errors++;
      });
      return { lat, errors };
    });

    // Heartbeats run from here to the end; each phase reads the latencies recorded during it.
    let hbLat: number[] = [];
    let hbErrors = 0;
    let hbSkipped = 0;
    let beating = true;
    const inFlight = new Set<string>();
    const timers: NodeJS.Timeout[] = [];
    ids.forEach((id, i) => {
      const beat = () => {
        if (!beating) return;
        if (inFlight.has(id)) {
          hbSkipped++;
          return;
        }
        inFlight.add(id);
        client
          .request('POST', `/v1/nodes/${id}/heartbeat`, { incarnation: 1 })
          .then((r) => {
            hbLat.push(r.ms);
            if (r.status !== 200) hbErrors++;
          })
          .catch(() => hbErrors++)
          .finally(() => inFlight.delete(id));
      };
      timers.push(
        setTimeout(
          () => {
            beat();
            timers.push(setInterval(beat, 1000));
          },
          (i * 1000) / ids.length,
        ),
      );
    });
    takeHeartbeats = () => {
      const r = {
        lat: hbLat,
        errors: hbErrors,
        note: `${hbSkipped} skipped (previous still in flight)`,
      };
      hbLat = [];
      hbErrors = 0;
      hbSkipped = 0;
      return r;
    };

    await phase(`${args.heartbeatSeconds} s of heartbeats only`, undefined, async () => {
      await sleep(args.heartbeatSeconds * 1000);
      return { lat: [], errors: 0 };
    });

    const wakes: number[] = [];
    const writes: number[] = [];
    await phase('feed wake samples', undefined, async () => {
      for (let i = 0; i < args.wakeSamples && Date.now() < deadline; i++) {
        const snap = (await client.request('GET', '/v1/tenants/snapshot')).json as {
          next_seq: number;
        };
        const poll = client.request(
          'GET',
          `/v1/tenants/changes?since=${snap.next_seq}&wait_ms=20000`,
        );
        await sleep(30); // let the poll park (a bench may sleep; tests may not)
        const t0 = performance.now();
        const write = await client.request('POST', '/v1/tenants', { tenant_id: `wake-${i}` });
        writes.push(write.ms);
        await poll;
        wakes.push(performance.now() - t0);
      }
      return { lat: [], errors: 0 };
    });
    const ws = [...wakes].sort((a, b) => a - b);
    const wr = [...writes].sort((a, b) => a - b);
    rows.push({
      backend,
      phase: 'feed wake (write sent → long poll answered)',
      requests: wakes.length,
      errors: 0,
      seconds: 0,
      p50: pct(ws, 50),
      p99: pct(ws, 99),
      cpu: Number.NaN,
      note: `the write alone: p50 ${fmt(pct(wr, 50))} ms, p99 ${fmt(pct(wr, 99))} ms`,
    });

    await client.request('POST', '/v1/tenants', { tenant_id: 'bench' });
    client.tokens.tenants.set('bench', await bootstrapToken(server, 'bench', false));
    await client.request('POST', '/v1/tenants/bench/namespaces', { namespace: 'ns' });
    const names = Array.from(
      { length: args.streams },
      (_, i) => `stream-${String(i).padStart(5, '0')}`,
    );
    let createdAt = 0;
    await phase(`create ${args.streams} streams (rf 3, 32 in flight)`, STREAMS_ROUTE, async () => {
      const lat: number[] = [];
      let errors = 0;
      const codes = new Map<string, number>();
      await pool(names, 32, async (name) => {
        if (Date.now() > deadline) return;
        const r = await client.request('POST', '/v1/tenants/bench/namespaces/ns/streams', {
          stream: name,
          shards: 1,
          replication_factor: 3,
        });
        lat.push(r.ms);
        if (r.status !== 201) {
          errors++;
          const code = String((r.json as { code?: string } | undefined)?.code ?? r.status);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      });
      createdAt = performance.now();
      return { lat, errors, note: [...codes].map(([c, k]) => `${k}× ${c}`).join(', ') };
    });
    await phase('placement catching up', undefined, async () => {
      let placed = 0;
      const until = Math.min(deadline, Date.now() + 180_000);
      while (Date.now() < until) {
        const snap = (await client.request('GET', '/v1/shard-assignments/snapshot')).json as {
          items: unknown[];
        };
        placed = snap.items.length;
        if (placed >= args.streams) break;
        await sleep(250);
      }
      return {
        lat: [],
        errors: 0,
        note: `${placed}/${args.streams} shards placed ${((performance.now() - createdAt) / 1000).toFixed(1)} s after the last create returned`,
      };
    });

    beating = false;
    for (const t of timers) clearTimeout(t);
    await sleep(200);
  } finally {
    client.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (backend === 'postgres') {
      const require = createRequire(join(CP_DIR, 'package.json'));
      const pg = require('pg') as {
        Client: new (o: {
          connectionString: string;
        }) => {
          connect(): Promise<void>;
          query(sql: string): Promise<unknown>;
          end(): Promise<void>;
        };
      };
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
  }
  return rows;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const deadline = Date.now() + args.deadlineSeconds * 1000;
  if (!existsSync(MAIN)) {
    process.stderr.write('building @felix/control-plane...\n');
    execFileSync(
      'npx',
      ['pnpm@10.34.9', 'exec', 'turbo', 'run', 'build', '--filter=@felix/control-plane...'],
      {
        cwd: ROOT,
        stdio: 'inherit',
        env: {
          ...process.env,
          TURBO_TELEMETRY_DISABLED: '1',
          COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
        },
      },
    );
  }
  const all: Row[] = [];
  const loads: string[] = [];
  const right = (title: string) => ({ title, align: 'right' as const });
  for (const backend of args.backends) {
    const before = loadavg()[0]!.toFixed(1);
    all.push(...(await runBackend(backend, args, deadline)));
    loads.push(`${backend} ${before} → ${loadavg()[0]!.toFixed(1)}`);
  }
  const lines = [
    `${args.brokers} brokers heartbeating every second; ${args.streams} streams; node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
    `1-minute load average on the 2-core machine at start → end of each run (other work shares it): ${loads.join('; ')}`,
    '',
    markdownTable(
      [
        'store',
        'phase',
        right('requests'),
        right('req/s'),
        right('client p50 / p99 ms'),
        right('server p50 / p99 ms (≤ bucket)'),
        right('server CPU (cores)'),
        right('errors'),
        'note',
      ],
      all.map((r) => [
        r.backend,
        r.phase,
        String(r.requests || '-'),
        String(r.seconds > 0 && r.requests ? Math.round(r.requests / r.seconds) : '-'),
        `${fmt(r.p50)} / ${fmt(r.p99)}`,
        r.serverP50 === undefined || Number.isNaN(r.serverP50)
          ? '-'
          : `${fmt(r.serverP50)} / ${fmt(r.serverP99 ?? Number.NaN)}`,
        Number.isNaN(r.cpu) ? '-' : r.cpu.toFixed(2),
        String(r.errors),
        r.note ?? '',
      ]),
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
