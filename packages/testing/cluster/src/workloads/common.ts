/**
 * What every workload process shares: its client (one per process, with short timeouts so a
 * fault is noticed quickly), the bounded wait of one recorded operation, and seeded pauses.
 */
import type { ConnectOptions, FelixClient } from '@felix/client';
import {
  WORKLOAD_IDLE_TIMEOUT_MS,
  WORKLOAD_OP_TIMEOUT_MS,
  WORKLOAD_PAUSE_MS_MAX,
  WORKLOAD_PAUSE_MS_MIN,
  WORKLOAD_RECONNECT_BASE_MS,
  WORKLOAD_RECONNECT_DELAY_MS_MAX,
  WORKLOAD_REQUEST_TIMEOUT_MS,
  scaled,
} from '../limits.js';
import type { Recorder } from '../recorder.js';
import type { ClusterNode } from '../types.js';
import type { Rng } from '../rng.js';

/** What a workload needs of a cluster: a client of its tenant, and its brokers when several. */
export interface WorkloadTarget {
  connect(extra?: Partial<ConnectOptions>): Promise<FelixClient>;
  readonly nodes?: readonly Pick<ClusterNode, 'index' | 'id' | 'url'>[];
}

/** The names the workloads use; the campaign declares them in the cluster and the meta line. */
export interface WorkloadNames {
  streams: readonly { name: string; shards: number }[];
  cache: string;
  /** Counters live beside the cache of the same name. */
  counter: string;
  group: { stream: string; name: string; shards: number };
}

export interface WorkloadContext {
  target: WorkloadTarget;
  recorder: Recorder;
  names: WorkloadNames;
  /** Ends the process's loop; operations in flight finish (or time out) first. */
  signal: AbortSignal;
}

/** A workload's client: answers within WORKLOAD_REQUEST_TIMEOUT_MS, reconnects quickly. */
export function workloadClient(
  target: WorkloadTarget,
  extra: Partial<ConnectOptions> = {},
): Promise<FelixClient> {
  return target.connect({
    ...extra,
    requestTimeoutMs: scaled(WORKLOAD_REQUEST_TIMEOUT_MS),
    idleTimeoutMs: WORKLOAD_IDLE_TIMEOUT_MS,
    reconnect: { baseMs: WORKLOAD_RECONNECT_BASE_MS, maxDelayMs: WORKLOAD_RECONNECT_DELAY_MS_MAX },
  });
}

export type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; phase: 'fail' | 'info'; error: unknown };

/**
 * Runs the operation invoked as `id` and completes it: `ok` with `fields(value)`, or the error's
 * `fail`/`info`. An operation without an answer within WORKLOAD_OP_TIMEOUT_MS is abandoned as
 * `info` (its signal aborts it; a late answer is dropped by the recorder).
 */
export async function recorded<T>(
  recorder: Recorder,
  id: string,
  op: (signal: AbortSignal) => Promise<T>,
  fields: (value: T) => Record<string, unknown> = () => ({}),
): Promise<Outcome<T>> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const opTimeoutMs = scaled(WORKLOAD_OP_TIMEOUT_MS);
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), opTimeoutMs);
  });
  try {
    const value = await Promise.race([op(ac.signal), timeout]);
    if (value === 'timeout') {
      ac.abort();
      const error = `no answer within ${opTimeoutMs} ms`;
      recorder.complete(id, 'info', { error });
      return { ok: false, phase: 'info', error };
    }
    recorder.complete(id, 'ok', fields(value as T));
    return { ok: true, value: value as T };
  } catch (err) {
    return { ok: false, phase: recorder.completeError(id, err), error: err };
  } finally {
    clearTimeout(timer);
  }
}

/** Waits `ms`, or less when `signal` aborts (never throws): paces a loop, not a test. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The seeded pause between two operations of one process. */
export function pace(rng: Rng, signal: AbortSignal): Promise<void> {
  return pause(rng.int(WORKLOAD_PAUSE_MS_MIN, WORKLOAD_PAUSE_MS_MAX), signal);
}

export const text = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Closes a workload's client; a client that cannot close (its broker is gone) is left. */
export async function closeClient(client: FelixClient): Promise<void> {
  await client.close().catch(() => undefined); // closing after the campaign: nothing to record
}
