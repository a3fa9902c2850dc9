/** Test support: one cluster per test, its log tails printed and its dir kept when it fails. */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterEach } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';

/** How long a step of a failover test may take before it fails (scaled). */
const STEP_MS = 60_000;

const TEXT = new TextDecoder();
const run = promisify(execFile);
const LOG_TOOL = resolve(import.meta.dirname, '../../../storage/dist/log-tool.js');
/** The storage flag of a generation-start record (docs/storage-format.md). */
const FLAG_GENERATION_START = 0x2000_0000;

/** Holds the test's cluster; after each test: tails printed on failure, everything shut down. */
export function clusterPerTest(): { cluster: FelixCluster | undefined } {
  const holder: { cluster: FelixCluster | undefined } = { cluster: undefined };
  afterEach(async (ctx) => {
    const c = holder.cluster;
    holder.cluster = undefined;
    if (c === undefined) return;
    const failed = ctx.task.result?.state === 'fail';
    if (failed) console.error(`cluster ${c.dir} (kept):\n${await c.logTails(60)}`);
    await c.shutdown({ keep: failed });
  });
  return holder;
}

/**
 * The values of a stream's shard (default 0) from offset 0 up to and including `last` (by value); fails
 * naming what it saw when `last` has not come within a step (a lost record fails the test
 * there, not at the test's own timeout).
 */
export async function readUpTo(
  client: FelixClient,
  stream: string,
  last: string,
  shard = 0,
): Promise<string[]> {
  const ac = new AbortController();
  const seen: string[] = [];
  const timer = setTimeout(() => ac.abort(), scaled(STEP_MS));
  try {
    for await (const ev of client.subscribe(stream, { from: 0, shard, signal: ac.signal })) {
      const v = TEXT.decode(ev.data);
      seen.push(v);
      if (v === last) return seen;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  throw new Error(
    `${stream} never reached ${last}; read ${seen.length}: ${seen.slice(-5).join(', ')}`,
  );
}

const RETRY_PAUSE_MS = 50;
const ACKS_PER_STEP = 20;

/** A publisher that keeps publishing (publishUntilStopped), and what it saw. */
export interface PublishRun {
  acked: string[];
  refused: number;
  /** The longest stretch from a first refusal to the next ack, in ms. */
  longestRefusedMs: number;
  /** The longest stretch between two acks (refusals and slow publishes alike), in ms. */
  longestGapMs: number;
  stop(): Promise<void>;
}

/** Publishes fresh values one at a time until stopped, recording acks and refused stretches. */
export function publishUntilStopped(publish: (v: string) => Promise<unknown>): PublishRun {
  let stopped = false;
  const run: PublishRun = {
    acked: [],
    refused: 0,
    longestRefusedMs: 0,
    longestGapMs: 0,
    stop: async () => {},
  };
  const loop = (async () => {
    let i = 0;
    let refusedSince: number | null = null;
    let lastAck: number | null = null;
    while (!stopped) {
      const v = `rec-${i++}`;
      try {
        await publish(v);
        run.acked.push(v);
        const now = performance.now();
        if (lastAck !== null) run.longestGapMs = Math.max(run.longestGapMs, now - lastAck);
        lastAck = now;
        if (refusedSince !== null) {
          run.longestRefusedMs = Math.max(run.longestRefusedMs, performance.now() - refusedSince);
          refusedSince = null;
        }
      } catch {
        // Refused or unknown: never counted as acked; retried with the next value after a pause.
        run.refused++;
        refusedSince ??= performance.now();
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  })();
  run.stop = async () => {
    stopped = true;
    await loop;
  };
  return run;
}

/** Waits until `ACKS_PER_STEP` more publishes were acked. */
export async function acksGrow(run: PublishRun, what: string): Promise<void> {
  const before = run.acked.length;
  await waitFor(async () => run.acked.length >= before + ACKS_PER_STEP, what, scaled(30_000));
}

/** A gauge's value from a Prometheus text page (labels matched exactly as written), or NaN. */
export function gauge(page: string, name: string, labels = ''): number {
  for (const line of page.split('\n')) {
    if (line.startsWith(`${name}${labels} `)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return Number.NaN;
}

/** A broker's metric, read from its /metrics page (NaN when absent). */
export async function metricOf(node: ClusterNode, name: string): Promise<number> {
  return gauge(await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text(), name);
}

/** Publishes each value once, in order, retrying refusals that wrote nothing (a new leader
 *  opening); an unknown outcome fails the test (a resend could duplicate the value). */
export async function publishAll(client: FelixClient, stream: string, values: string[]) {
  for (const v of values) {
    await waitFor(
      async () => {
        try {
          await client.publish(stream, v);
          return true;
        } catch (err) {
          if ((err as { retry?: string }).retry === 'unknown_outcome') throw err;
          return false;
        }
      },
      `publish ${v}`,
      scaled(STEP_MS),
    );
  }
}

/** The first answer of `ask` that is not a refusal: the promoted broker may still be opening
 *  the shard (`not_ready`) when the control plane already names it. */
export async function served<T>(ask: () => Promise<T>, what: string): Promise<T> {
  const got = await waitFor(
    async () => {
      try {
        return { value: await ask() };
      } catch {
        // Refused while the shard opens on its leader: ask again.
        return undefined;
      }
    },
    what,
    scaled(STEP_MS),
  );
  return got.value;
}

/** A value's bytes as text (undefined stays undefined). */
export function text(b: Uint8Array | undefined): string | undefined {
  return b === undefined ? undefined : TEXT.decode(b);
}

/**
 * The quorum timeout for a test: a short one stays under the control plane's expiry (not
 * scaled), or paused followers are marked down and dropped from the set first, and a set of
 * the leader alone acks what was waiting (found with FELIX_TEST_TIMEOUT_SCALE=3).
 */
export function quorumTimeout(ms: number): number {
  return ms < CP_EXPIRY_TIMEOUT_MS ? Math.min(scaled(ms), CP_EXPIRY_TIMEOUT_MS - 500) : scaled(ms);
}

/** One record of a replica's log as the storage log tool dumps it. */
export interface HeldRecord {
  offset: number;
  flags: number;
  payload: Buffer;
}

/** The directory of `stream` shard 0 in a node's data directory, when it has one. */
export async function shardDirOf(node: ClusterNode, stream: string): Promise<string | undefined> {
  const root = join(node.dataDir, 'streams');
  const dir = (await readdir(root).catch(() => [] as string[])).find((d) =>
    d.includes(`_${stream}_0-`),
  );
  return dir === undefined ? undefined : join(root, dir);
}

/** Every record one replica's log of `stream` shard 0 holds, generation starts included, read
 *  from its files with the storage log tool (`dump`, read-only: the broker may be running). */
export async function heldRecords(node: ClusterNode, stream: string): Promise<HeldRecord[]> {
  const dir = await shardDirOf(node, stream);
  if (dir === undefined) return [];
  const { stdout } = await run(process.execPath, [LOG_TOOL, 'dump', dir]);
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { offset: number; flags: number; payload: string })
    .map((r) => ({ offset: r.offset, flags: r.flags, payload: Buffer.from(r.payload, 'base64') }));
}

/** The user records' values of `held` (generation starts, flag bit 29, left out). */
export function valuesOf(held: readonly HeldRecord[]): string[] {
  return held
    .filter((r) => (r.flags & FLAG_GENERATION_START) === 0)
    .map((r) => TEXT.decode(r.payload));
}

/** A replica report as the control plane stores it (`GET /v1/replica-reports`), the fields the
 *  tests read. */
export interface StoredReplicaReport {
  kind: string;
  stream: string;
  generation: number;
  leader_offset: number;
  commit_offset: number;
  replica_offsets: { node_id: string; durable_offset: number }[];
}

/** The stored report of `kind` shard `name` at `generation`, if the control plane holds one. */
export async function storedReport(
  c: FelixCluster,
  kind: 'stream' | 'cache',
  name: string,
  generation: number,
): Promise<StoredReplicaReport | undefined> {
  const page = (await c.operatorGet('/v1/replica-reports')) as { items: StoredReplicaReport[] };
  return page.items.find(
    (r) => (r.kind ?? 'stream') === kind && r.stream === name && r.generation === generation,
  );
}

/**
 * Waits until `leader` has every log of the shard on its followers (its lag gauge at 0) and the
 * control plane holds a report of `generation` naming a caught-up follower: only then may a
 * SIGKILL of the leader promote one (docs/replication.md, "Replica reports and promotion").
 */
export async function shippedAndReported(
  c: FelixCluster,
  leader: ClusterNode,
  kind: 'stream' | 'cache',
  name: string,
  generation: number,
): Promise<void> {
  await waitFor(
    async () => (await metricOf(leader, 'felix_broker_replication_lag_records')) === 0,
    'the followers to confirm every log',
    scaled(STEP_MS),
  );
  await waitFor(
    async () => {
      const r = await storedReport(c, kind, name, generation);
      return r?.replica_offsets.some((o) => o.durable_offset === r.leader_offset);
    },
    'a replica report naming a caught-up follower',
    scaled(STEP_MS),
  );
}
