/**
 * The recorder: every workload and the nemesis write their operations here, as history lines
 * (the contract of @felix/testing-history's history.ts) appended as JSONL to one file, on one
 * monotonic clock that starts with the campaign. An operation is an `invoke` line and exactly
 * one completion with the same id; an observation is a single `ok` line.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { HistoryLine, MetaLine } from '@felix/testing-history';
import { RecorderStateError } from './errors.js';
import {
  RECORDER_BUFFER_LINES_MAX,
  RECORDER_ERROR_CHARS_MAX,
  RECORDER_FLUSH_INTERVAL_MS,
} from './limits.js';

/** A line without the fields the recorder fills in (distributed over the union's members). */
type Fields<L> = L extends unknown ? Omit<L, 't' | 'process' | 'phase' | 'id'> : never;

export type InvokeFields = Fields<Extract<HistoryLine, { phase: 'invoke' }>>;
export type ObserveFields = Fields<
  Extract<HistoryLine, { f: 'deliver' | 'gap' | 'final_read' | `${string}_final` }>
>;
export type OutcomePhase = 'fail' | 'info';

/** Broker codes whose refusal says the request was not applied (a `fail`). */
const NOT_APPLIED_CODES: ReadonlySet<string> = new Set([
  'not_found',
  'forbidden',
  'unauthenticated',
  'invalid_request',
  'overloaded',
  'limit_exceeded',
  'not_leader',
  'shard_unavailable',
  'draining',
  'stale_claim',
]);

/** Client errors raised before anything was sent (bad arguments, unknown stream, cursors). */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'FELIX_CLIENT_INVALID_ARGUMENT',
  'FELIX_CLIENT_UNKNOWN_STREAM',
  'FELIX_CLIENT_CURSOR_TOO_OLD',
  'FELIX_CLIENT_CURSOR_IN_FUTURE',
  'FELIX_CLIENT_FEATURE_UNSUPPORTED',
]);

/**
 * `fail` only when the error says for sure that nothing was applied: a typed broker refusal of
 * a code that refuses before acting, without an `unknown_outcome` retry class, or a client check
 * that refused before sending. Everything else (timeouts, lost connections, storage and internal
 * errors, anything unrecognised) is `info`: the operation may or may not have happened. Read by
 * property, not by class: the client's dist bundles its own copy of the error classes.
 */
export function classifyError(err: unknown): { phase: OutcomePhase; error: string } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    retry?: unknown;
    brokerCode?: unknown;
    message?: unknown;
  };
  const code = typeof e.code === 'string' ? e.code : 'unknown';
  const text = typeof e.message === 'string' ? e.message : String(err);
  const error = `${code}: ${text}`.slice(0, RECORDER_ERROR_CHARS_MAX);
  if (e.retry === 'unknown_outcome') return { phase: 'info', error };
  if (typeof e.brokerCode === 'string' && NOT_APPLIED_CODES.has(e.brokerCode))
    return { phase: 'fail', error };
  if (typeof e.brokerCode !== 'string' && NOT_SENT_CODES.has(code)) return { phase: 'fail', error };
  return { phase: 'info', error };
}

export interface RecorderOptions {
  /** performance.now() at the campaign's start: time 0 of the history. */
  origin?: number;
}

export class Recorder {
  readonly origin: number;
  private fd: number | undefined;
  private buffer: string[] = [];
  private readonly counters = new Map<string, number>();
  /** Invokes awaiting their completion: id → the line's kind and process. */
  private readonly pending = new Map<string, { f: string; process: string }>();
  private readonly timer: NodeJS.Timeout;
  private written = 0;

  constructor(
    readonly path: string,
    meta: Omit<MetaLine, 'f' | 't' | 'process' | 'phase' | 'id'>,
    opts: RecorderOptions = {},
  ) {
    this.origin = opts.origin ?? performance.now();
    this.fd = openSync(path, 'w');
    this.push({ f: 'meta', t: 0, process: 'campaign', phase: 'ok', id: 'meta', ...meta });
    this.timer = setInterval(() => this.flush(), RECORDER_FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  /** Milliseconds since the campaign started, on the history's clock. */
  now(): number {
    return Math.round((performance.now() - this.origin) * 1000) / 1000;
  }

  /** Lines written so far (the meta line included). */
  get lines(): number {
    return this.written + this.buffer.length;
  }

  /** Records the start of an operation; answers its id. */
  invoke(process: string, fields: InvokeFields): string {
    const id = this.nextId(process);
    this.pending.set(id, { f: fields.f, process });
    this.push({ ...fields, t: this.now(), process, phase: 'invoke', id });
    return id;
  }

  /**
   * Records the completion of `id`. Answers false (and writes nothing) when `id` already
   * completed: an operation abandoned on its timeout is `info`, and its late answer is dropped.
   */
  complete(id: string, phase: 'ok' | OutcomePhase, fields: Record<string, unknown> = {}): boolean {
    const op = this.pending.get(id);
    if (op === undefined) return false;
    this.pending.delete(id);
    this.push({ ...fields, f: op.f, t: this.now(), process: op.process, phase, id });
    return true;
  }

  /** Completes `id` with the `fail` or `info` that `err` deserves (see classifyError). */
  completeError(id: string, err: unknown): OutcomePhase {
    const { phase, error } = classifyError(err);
    this.complete(id, phase, { error });
    return phase;
  }

  /** Records an observation (a delivery, a gap, a final read): one `ok` line. */
  observe(process: string, fields: ObserveFields): string {
    const id = this.nextId(process);
    this.push({ ...fields, t: this.now(), process, phase: 'ok', id });
    return id;
  }

  flush(): void {
    if (this.fd === undefined || this.buffer.length === 0) return;
    const text = this.buffer.join('');
    this.written += this.buffer.length;
    this.buffer = [];
    writeSync(this.fd, text);
  }

  /**
   * Completes every operation still open as `info` (the campaign ended before its answer came,
   * so its outcome is unknown), writes everything and closes the file.
   */
  close(): void {
    if (this.fd === undefined) return;
    for (const id of [...this.pending.keys()])
      this.complete(id, 'info', { error: 'the campaign ended before the operation completed' });
    clearInterval(this.timer);
    this.flush();
    closeSync(this.fd);
    this.fd = undefined;
  }

  private nextId(process: string): string {
    const n = (this.counters.get(process) ?? 0) + 1;
    this.counters.set(process, n);
    return `${process}:${n}`;
  }

  private push(line: Record<string, unknown>): void {
    if (this.fd === undefined)
      throw new RecorderStateError(`the recorder of ${this.path} is closed`);
    this.buffer.push(`${JSON.stringify(line)}\n`);
    if (this.buffer.length >= RECORDER_BUFFER_LINES_MAX) this.flush();
  }
}
