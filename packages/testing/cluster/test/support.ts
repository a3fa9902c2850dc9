/** Test support: one cluster per test, its log tails printed and its dir kept when it fails. */
import type { FelixClient } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { afterEach } from 'vitest';
import { type ClusterNode, type FelixCluster, scaled } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';

/** How long a step of a failover test may take before it fails (scaled). */
const STEP_MS = 60_000;

const TEXT = new TextDecoder();

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

/** The values of a one-shard stream from offset 0 up to and including `last` (by value). */
export async function readUpTo(
  client: FelixClient,
  stream: string,
  last: string,
): Promise<string[]> {
  const ac = new AbortController();
  const seen: string[] = [];
  try {
    for await (const ev of client.subscribe(stream, { from: 0, shard: 0, signal: ac.signal })) {
      const v = TEXT.decode(ev.data);
      seen.push(v);
      if (v === last) return seen;
    }
    return seen;
  } finally {
    ac.abort();
  }
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
