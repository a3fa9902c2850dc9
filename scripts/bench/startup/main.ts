// How long a broker and a control plane take from spawn to serving: the wait every restart, every
// failover's replacement process and every test cluster pays. Each run spawns the built process
// (services/*/dist/main.js) on free ports and a fresh data dir, times it to its `listening` log
// line, and kills it. Medians and the range over the runs, with the CPU the process used by
// then (from /proc, user + system). Compare builds by running this on each.
// Run (build first): node --import tsx scripts/bench/startup/main.ts [--runs 9] [--repo <dir>]
// (`--repo`: another checkout's built services, e.g. a worktree of an earlier commit.)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(arg('--runs') ?? 9) || 9;
const repo = arg('--repo') ?? join(import.meta.dirname, '..', '..', '..');
const TICKS_PER_S = 100;
const START_DEADLINE_MS = 30_000;

interface Target {
  name: string;
  main: string;
  marker: string;
  env: (dir: string) => NodeJS.ProcessEnv;
}

const targets: Target[] = [
  {
    name: 'broker (dev auth, durable)',
    main: join(repo, 'services/broker/dist/main.js'),
    marker: '"msg":"listening"',
    env: (dir) => ({
      FELIX_BROKER_PORT: '0',
      FELIX_BROKER_HTTP_PORT: '0',
      FELIX_AUTH_MODE: 'dev',
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
    }),
  },
  {
    name: 'control plane (SQLite)',
    main: join(repo, 'services/control-plane/dist/main.js'),
    marker: '"event":"listening"',
    env: (dir) => ({
      FELIX_CONTROLPLANE_BIND: '127.0.0.1:0',
      FELIX_CONTROLPLANE_DATA_DIR: join(dir, 'cp'),
    }),
  },
];

/** CPU seconds the process has used (user + system), from /proc/<pid>/stat. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
}

function untilMarker(child: ChildProcess, marker: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no ${marker} within the deadline`)),
      START_DEADLINE_MS,
    );
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(marker)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${marker}: ${seen.slice(-500)}`));
    });
  });
}

async function once(t: Target): Promise<{ ms: number; cpu: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'felix-startup-'));
  const started = performance.now();
  const child = spawn(process.execPath, [t.main], {
    env: { ...process.env, ...t.env(dir) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await untilMarker(child, t.marker);
    const ms = performance.now() - started;
    return { ms, cpu: await cpuMs(child.pid as number) };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(
  `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, ${runs} runs each`,
);
for (const t of targets) {
  const got: { ms: number; cpu: number }[] = [];
  for (let i = 0; i < runs; i++) got.push(await once(t));
  const ms = got.map((g) => g.ms);
  const cpu = got.map((g) => g.cpu);
  console.log(
    `${t.name}: to listening median ${median(ms).toFixed(0)} ms (${Math.min(...ms).toFixed(0)}-${Math.max(...ms).toFixed(0)}), CPU by then median ${median(cpu).toFixed(0)} ms`,
  );
}
