/** Test support: one cluster per test, its log tails printed and its dir kept when it fails. */
import type { FelixClient } from '@felix/client';
import { afterEach } from 'vitest';
import type { FelixCluster } from '../src/index.js';

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
