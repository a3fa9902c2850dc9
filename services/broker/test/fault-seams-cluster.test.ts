// Goal: the partition file cuts a real broker off its control plane and off a peer: cut from the
// control plane it reports `felix_broker_controlplane_reachable 0` (calls fail unsent) yet stays
// ready and keeps its shards, and reports 1 again after the heal; a peer named in the file is
// reported unreachable (`felix_broker_peer_reachable{peer}` 0) while the other side, whose file
// is empty, still reaches it, and 1 again after the heal.
// Method: real processes from the built dist/ of both services (test/support/cluster.ts), the
// partition files rewritten while they run, /metrics read with waitFor deadlines.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Child, freePort, tempDir, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import {
  OPERATOR_PERMISSIONS,
  type Running,
  SETTLE_MS,
  bootstrapToken,
  nodeToken,
  readyStatus,
  startClusterBroker,
  startControlPlane,
} from './support/cluster.js';

const children: Child[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function metrics(b: Running): Promise<string> {
  return (await fetch(`http://127.0.0.1:${b.httpPort}/metrics`)).text();
}

/** The value of `series` (name and labels, exactly as exposed), or null when absent. */
async function gauge(b: Running, series: string): Promise<number | null> {
  const line = (await metrics(b)).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

/** A control plane and a way to start brokers registered with it, all cleaned up after. */
async function cluster(): Promise<{
  dir: string;
  broker(id: string, env?: NodeJS.ProcessEnv): Promise<Running>;
}> {
  const dir = await tempDir('felix-faults');
  cleanups.push(dir.cleanup);
  const cpPort = await freePort();
  const bootPort = await freePort();
  const cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
  children.push(cp);
  await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, { operator: true });
  return {
    dir: dir.path,
    async broker(id, env = {}) {
      const b = await startClusterBroker(dir.path, {
        FELIX_CONTROLPLANE_URL: `http://127.0.0.1:${cpPort}`,
        FELIX_NODE_TOKEN: await nodeToken(bootPort, id),
        FELIX_NODE_ID: id,
        FELIX_NODE_PEER_PROBE_INTERVAL_MS: '200',
        ...env,
      });
      children.push(b.child);
      await waitFor(async () => (await readyStatus(b)) === 200, `${id} to be ready`, SETTLE_MS);
      return b;
    },
  };
}

describe('partition file', () => {
  it('a_broker_partitioned_from_the_control_plane_reports_it_unreachable_and_reaches_it_after_heal', async () => {
    const c = await cluster();
    const cut = join(c.dir, 'partition-a');
    await writeFile(cut, '# nothing cut yet\n');
    const a = await c.broker('a', { FELIX_TEST_PARTITION_FILE: cut });
    const reachable = 'felix_broker_controlplane_reachable';
    await waitFor(async () => (await gauge(a, reachable)) === 1, 'reachable', SETTLE_MS);
    await writeFile(cut, 'controlplane\n');
    await waitFor(async () => (await gauge(a, reachable)) === 0, 'unreachable', SETTLE_MS);
    await waitFor(
      async () => a.child.stdout().includes('the control plane is unreachable: cut by the test'),
      'a call failed by the partition',
      SETTLE_MS,
    );
    // Cut off, the broker keeps serving what it holds: still ready (until its lease lapses).
    expect(await readyStatus(a)).toBe(200);
    await writeFile(cut, '');
    await waitFor(async () => (await gauge(a, reachable)) === 1, 'reachable again', SETTLE_MS);
  });

  it('a_broker_cut_from_the_control_plane_turns_unready_once_its_lease_lapses_and_ready_after_heal', async () => {
    const c = await cluster();
    const cut = join(c.dir, 'partition-a');
    await writeFile(cut, '# nothing cut yet\n');
    const a = await c.broker('a', { FELIX_TEST_PARTITION_FILE: cut });
    await writeFile(cut, 'controlplane\n');
    // 0.75 of the control plane's expiry timeout after the last accepted heartbeat was sent.
    const body = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${a.httpPort}/ready`);
        const text = await res.text();
        return res.status === 503 ? text : null;
      },
      'not ready once the lease lapses',
      SETTLE_MS,
    );
    expect(body).toMatch(/^not ready: lease_lapsed/);
    await writeFile(cut, '');
    await waitFor(async () => (await readyStatus(a)) === 200, 'ready after the heal', SETTLE_MS);
  });

  it('a_broker_partitioned_from_a_peer_reports_it_unreachable', async () => {
    const c = await cluster();
    const cutA = join(c.dir, 'partition-a');
    const a = await c.broker('a', { FELIX_TEST_PARTITION_FILE: cutA });
    const b = await c.broker('b');
    const aSeesB = 'felix_broker_peer_reachable{peer="b"}';
    const bSeesA = 'felix_broker_peer_reachable{peer="a"}';
    await waitFor(async () => (await gauge(a, aSeesB)) === 1, 'a to reach b', SETTLE_MS);
    await waitFor(async () => (await gauge(b, bSeesA)) === 1, 'b to reach a', SETTLE_MS);
    await writeFile(cutA, 'node:b\n');
    await waitFor(async () => (await gauge(a, aSeesB)) === 0, 'a to lose b', SETTLE_MS);
    // Only the side whose file names the peer is cut; b's own probes of a still connect.
    expect(await gauge(b, bSeesA)).toBe(1);
    expect(await gauge(a, 'felix_broker_controlplane_reachable')).toBe(1);
    await writeFile(cutA, '');
    await waitFor(async () => (await gauge(a, aSeesB)) === 1, 'a to reach b again', SETTLE_MS);
    // a's probes (a TCP connect closed before any TLS handshake) leave no warning in b's log;
    // the ones b logs at start (dev mode, a missing malloc-trim addon) are not about peers.
    const warnings = b.child
      .jsonLines()
      .map((l) => l as { level?: number; msg?: string })
      .filter((l) => (l.level ?? 0) >= 40 && !/auth.mode is dev|malloc-trim/.test(l.msg ?? ''));
    expect(warnings).toEqual([]);
  });
});
