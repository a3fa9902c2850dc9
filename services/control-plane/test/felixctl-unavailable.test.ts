// Goal: `felixctl sub --until-end` never reports a stream that holds records, but cannot be
// served, as an empty stream that ended. A new user's trial: a quorum stream whose replica set
// lost its majority (and, alike, a one-copy durable stream whose broker stopped) printed nothing
// and exited 0, exactly what it prints for an empty stream; the same shard refused `pub`, `cache
// get` and `group describe` with `shard_unavailable` (exit 3).
// Method: a real control plane and two brokers from @felix/testing-cluster, a durable one-copy
// stream with two acked records, its broker stopped with SIGTERM (it deregisters, so the other
// broker at once answers `shard_unavailable`, `leader_not_live`), then the built felixctl as a
// process through the surviving broker.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type FelixCluster, startCluster } from '@felix/testing-cluster';
import { tempDir } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Run, startFelixctl } from './felixctl-process.js';

let cluster: FelixCluster;
let home: Awaited<ReturnType<typeof tempDir>>;
let env: Record<string, string>;

beforeAll(async () => {
  home = await tempDir('felixctl-unavailable');
  cluster = await startCluster({
    brokers: 2,
    streams: [{ name: 'held', shards: 1, durable: true }],
  });
  await cluster.waitServed();
  const ca = join(home.path, 'ca.pem');
  await writeFile(ca, cluster.caPem);
  const o = cluster.clientOptions();
  env = {
    FELIX_TENANT: o.tenant,
    FELIX_TOKEN: String(o.token),
    FELIX_CA: ca,
    FELIX_SERVER_NAME: 'localhost',
  };
}, 120_000);
afterAll(async () => {
  await cluster?.shutdown();
  await home?.cleanup();
});

function ctl(servers: string, ...args: string[]): Promise<Run> {
  return startFelixctl(home.path, { ...env, FELIX_SERVERS: servers }, args).done;
}

describe('felixctl against a shard that cannot be served', () => {
  it('felixctl_sub_until_end_of_a_stream_that_cannot_be_served_fails_rather_than_printing_an_empty_stream', async () => {
    const leader = (await cluster.leaderOf('held'))!;
    const other = cluster.nodes.find((n) => n.id !== leader.id)!;
    for (const v of ['r0', 'r1']) {
      const p = await ctl(leader.url(), 'pub', 'held', v);
      expect(p.code, p.err).toBe(0);
    }
    await cluster.stop(leader.id);
    // A publish through the other broker fails as unavailable, exit 3: refused there
    // (`shard_unavailable`), or, when the client still routes to the owner it learned, that
    // owner unreachable.
    const pub = await ctl(other.url(), 'pub', 'held', 'r2');
    expect(pub.code, pub.err).toBe(3);
    expect(pub.err).toMatch(/shard_unavailable|FELIX_CLIENT_CONNECT/);
    // Reading it back to its end must not look like an empty stream that ended well.
    const sub = await ctl(
      other.url(),
      'sub',
      'held',
      '--from',
      'earliest',
      '--until-end',
      '--idle',
      '1s',
    );
    expect({ code: sub.code, out: sub.out }).not.toEqual({ code: 0, out: [] });
    expect(sub.code, sub.err).toBe(3);
    expect(sub.err).toMatch(/shard_unavailable|FELIX_CLIENT_CONNECT/);
  }, 180_000);
});
