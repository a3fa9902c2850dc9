/**
 * One child process of the cluster (a broker or the control plane): spawned from a built
 * `dist/main.js`, its stdout and stderr appended to a log file across restarts with a small tail
 * kept in memory, and the signals the faults send (SIGKILL, SIGTERM, SIGSTOP, SIGCONT).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type WriteStream, createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { FaultTimeoutError, NodeStateError, ProcessStartError } from '../errors.js';
import {
  FAULT_DEADLINE_MS,
  LOG_LINE_BYTES_MAX,
  LOG_TAIL_LINES_MAX,
  PROCESS_EXIT_DEADLINE_MS,
  PROCESS_READY_POLL_MS,
  START_ERROR_TAIL_LINES,
  SIGNAL_POLL_MS,
  PROCESS_STOP_GRACE_MS,
  scaled,
} from '../limits.js';
import { pollUntil, within } from './within.js';

export type ProcState = 'running' | 'paused' | 'stopped';

export interface SpawnSpec {
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** A substring of the stdout line that says the process listens (a JSON log line). */
  readyMarker: string;
  deadlineMs: number;
}

/** Every variable of `env` that is not undefined (so `undefined` removes an inherited one). */
function definedEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** True when /proc says the process is stopped (T) or there is no /proc to ask. */
async function procStopped(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't';
  } catch {
    return process.platform !== 'linux'; // no /proc: the signal is all we can know
  }
}

export class ManagedProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly tail: string[] = [];
  private paused = false;
  private readonly killOnExit = () => this.child?.kill('SIGKILL');

  constructor(
    readonly name: string,
    readonly logPath: string,
  ) {}

  get state(): ProcState {
    if (this.child === null) return 'stopped';
    return this.paused ? 'paused' : 'running';
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last lines of output kept in memory (the log file holds everything). */
  tailLines(): readonly string[] {
    return this.tail;
  }

  /** Spawns `node <args>`; answers the parsed ready line once it is printed. */
  async start(spec: SpawnSpec): Promise<Record<string, unknown>> {
    if (this.child !== null) throw new NodeStateError(`${this.name} is already ${this.state}`);
    const log = createWriteStream(this.logPath, { flags: 'a' });
    // A log that cannot be written (its dir removed under it) must not crash the test run: the
    // in-memory tail still has the lines.
    log.on('error', (err) => this.keep(`(log file ${this.logPath}: ${err.message})`));
    const child = spawn(process.execPath, spec.args, {
      cwd: spec.cwd,
      env: definedEnv({ ...process.env, ...spec.env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // A spawn or signal failure is an 'error' event: kept in the tail, never an uncaught throw.
    child.on('error', (err) => this.keep(`(${this.name}: ${err.message})`));
    this.child = child;
    this.paused = false;
    process.once('exit', this.killOnExit);
    log.write(`--- ${this.name}: started pid ${child.pid} at ${new Date().toISOString()} ---\n`);
    const seen: { ready: Record<string, unknown> | null } = { ready: null };
    const onLine = (line: string) => {
      this.keep(line);
      if (seen.ready === null && line.includes(spec.readyMarker)) {
        seen.ready = parseJson(line) ?? {};
      }
    };
    const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      child.once('close', (code, signal) => resolve({ code, signal }));
    });
    lines(child.stdout, log, onLine);
    lines(child.stderr, log, onLine);
    this.exited = closed.then(({ code, signal }) => {
      log.end(`--- ${this.name}: exited code ${code} signal ${signal} ---\n`);
      process.off('exit', this.killOnExit);
      if (this.child === child) {
        this.child = null;
        this.paused = false;
      }
    });
    const up = await pollUntil(
      () => seen.ready !== null || this.child !== child,
      spec.deadlineMs,
      PROCESS_READY_POLL_MS,
    );
    if (seen.ready !== null) return seen.ready;
    await this.kill();
    const why = up ? 'exited' : `did not print ${spec.readyMarker} within ${spec.deadlineMs} ms`;
    const tail = this.tail.slice(-START_ERROR_TAIL_LINES).join('\n');
    throw new ProcessStartError(
      `${this.name} ${why} before it listened; log ${this.logPath}:\n${tail}`,
    );
  }

  private keep(line: string): void {
    this.tail.push(
      line.length > LOG_LINE_BYTES_MAX ? `${line.slice(0, LOG_LINE_BYTES_MAX)}…` : line,
    );
    if (this.tail.length > LOG_TAIL_LINES_MAX)
      this.tail.splice(0, this.tail.length - LOG_TAIL_LINES_MAX);
  }

  /** SIGKILL (a paused process dies too); resolves once it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    child.kill('SIGKILL');
    await within(
      this.exited,
      scaled(PROCESS_EXIT_DEADLINE_MS),
      () => new FaultTimeoutError(`${this.name} (pid ${child.pid}) still runs after SIGKILL`),
    );
  }

  /** SIGTERM (after SIGCONT when paused), SIGKILL after the grace; resolves once it is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    if (this.paused) await this.resume();
    child.kill('SIGTERM');
    const grace = setTimeout(() => child.kill('SIGKILL'), scaled(PROCESS_STOP_GRACE_MS));
    try {
      await within(
        this.exited,
        scaled(PROCESS_STOP_GRACE_MS) + scaled(PROCESS_EXIT_DEADLINE_MS),
        () => new FaultTimeoutError(`${this.name} (pid ${child.pid}) still runs after SIGKILL`),
      );
    } finally {
      clearTimeout(grace);
    }
  }

  /** SIGSTOP; resolves once the kernel reports the process stopped. */
  async pause(): Promise<void> {
    const child = this.running('pause');
    child.kill('SIGSTOP');
    this.paused = true;
    const done = await pollUntil(
      () => procStopped(child.pid as number),
      scaled(FAULT_DEADLINE_MS),
      SIGNAL_POLL_MS,
    );
    if (!done)
      throw new FaultTimeoutError(`${this.name} (pid ${child.pid}) did not stop on SIGSTOP`);
  }

  /** SIGCONT; resolves once the process runs again. */
  async resume(): Promise<void> {
    const child = this.child;
    if (child === null) throw new NodeStateError(`cannot resume ${this.name}: it is stopped`);
    child.kill('SIGCONT');
    const done = await pollUntil(
      async () => !(await procStopped(child.pid as number)) || process.platform !== 'linux',
      scaled(FAULT_DEADLINE_MS),
      SIGNAL_POLL_MS,
    );
    if (!done)
      throw new FaultTimeoutError(`${this.name} (pid ${child.pid}) did not run on SIGCONT`);
    this.paused = false;
  }

  private running(what: string): ChildProcess {
    if (this.child === null || this.paused) {
      throw new NodeStateError(`cannot ${what} ${this.name}: it is ${this.state}`);
    }
    return this.child;
  }
}

function parseJson(line: string): Record<string, unknown> | null {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null; // a ready marker on a line that is not JSON: the line itself is enough
  }
}

/** Appends a stream to the log and calls `onLine` per complete line. */
function lines(stream: Readable | null, log: WriteStream, onLine: (line: string) => void): void {
  if (stream === null) return;
  let partial = '';
  stream.setEncoding('utf8').on('data', (chunk: string) => {
    log.write(chunk);
    const parts = (partial + chunk).split('\n');
    partial = (parts.pop() ?? '').slice(-LOG_LINE_BYTES_MAX);
    for (const p of parts) onLine(p);
  });
  stream.on('end', () => {
    if (partial !== '') onLine(partial);
  });
}
