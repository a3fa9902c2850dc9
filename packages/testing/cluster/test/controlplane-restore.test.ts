// Goal: the control plane's database restored from a backup, as docs/operations.md ("Backups",
// "The control plane's database") says to (stop it, put the copy back, start it), leaves the
// cluster writing, as long as the catalog named the same streams then.
// Method: 3 real brokers with internal listeners, a 1-shard durable `quorum` stream at
// replication factor 3. The SQLite file is copied while the control plane is stopped (the
// documented cold copy), the control plane started again, then the stream's leader restarted
// with SIGTERM (its hand-off moves the shard at the next generation: an ordinary rolling
// restart after the backup), then the copy put back and the control plane started on it. A
// publish must be acked again within a failover's time.
// Found by an operator trial on Postgres (pg_dump of the schema, restored into an empty database,
// the control plane pointed at it): the restored assignments name the old leader at the older
// generation, the followers that already follow the newer one refuse it (`deposed`), and every
// publish and cache put was answered `quorum_timeout` for as long as the trial ran (minutes;
// a SIGTERM of that leader was `refused` its hand-off and it came back leading the same). Here,
// on SQLite, the restored leader's fence is refused `deposed`, it then opens logging "the new
// leader holds less than a replica says was committed", and its followers stop it (`fenced`):
// publishes time out. The outcome depends on timing: it failed 3 of 7 runs on a loaded 2-core machine.
// Now a broker's report at a generation newer than its assignment moves the assignment past it.
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { scaled, startCluster } from '../src/index.js';
import { CP_EXPIRY_TIMEOUT_MS } from '../src/limits.js';
import { clusterPerTest } from './support.js';

const STEP_MS = 60_000;
const TEST_MS = 300_000;

/** The SQLite files of a stopped control plane (`controlplane.sqlite` and its -wal/-shm). */
async function sqliteFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.startsWith('controlplane.sqlite'));
}

describe('restoring the control plane from a backup', () => {
  const holder = clusterPerTest();

  // Failed 3 of 7 runs in an operator's trial before the control plane moved an assignment past
  // a generation its brokers report (replica-reports.ts, moveAssignmentPast).
  it(
    'a_control_plane_restored_from_a_backup_taken_before_a_hand_off_lets_the_stream_be_written',
    async () => {
      const c = await startCluster({
        brokers: 3,
        replication: true,
        streams: [{ name: 'orders', shards: 1, replicationFactor: 3, consistency: 'quorum' }],
      });
      holder.cluster = c;
      const client = await c.connect();
      await waitFor(
        async () => (await client.publish('orders', 'before').catch(() => null)) !== null,
        'a first publish to be acked',
        scaled(STEP_MS),
      );
      const cpDir = join(c.dir, 'controlplane');
      const backup = join(c.dir, 'cp-backup');
      await mkdir(backup);
      // The cold backup: stop the control plane, copy the file with its -wal, start it again.
      await c.controlPlane.proc.stop();
      for (const f of await sqliteFiles(cpDir)) await copyFile(join(cpDir, f), join(backup, f));
      await c.controlPlane.restart();
      await c.waitServed();
      // A rolling restart of the leader after the backup: its hand-off bumps the generation.
      for (let round = 0; round < 1; round++) {
        const before = (await c.leaderOf('orders'))!.id;
        await c.stop(before);
        await waitFor(
          async () => {
            const now = (await c.leaderOf('orders'))?.id;
            return now !== undefined && now !== before;
          },
          'the shard to be handed off',
          scaled(STEP_MS),
        );
        await c.start(before);
        await c.waitServed();
      }
      await waitFor(
        async () =>
          (await client.publish('orders', 'after the hand-off').catch(() => null)) !== null,
        'a publish after the hand-off to be acked',
        scaled(STEP_MS),
      );
      const ordersOf = async () => (await c.assignments()).find((a) => a.stream === 'orders');
      const handedOff = (await ordersOf())!.generation;
      // The restore: stop it, put the backup back, start it.
      await c.controlPlane.proc.stop();
      for (const f of await sqliteFiles(cpDir)) await rm(join(cpDir, f));
      for (const f of await sqliteFiles(backup)) await copyFile(join(backup, f), join(cpDir, f));
      await c.controlPlane.restart();
      const restoredLeader = (await c.leaderOf('orders'))?.id;
      // Writes go on: each of ten publishes is acked within a failover's time (L + margin, twice
      // over, and the client's retries), one after another.
      let last = '';
      for (let i = 0; i < 10; i++) {
        const acked = await waitFor(
          async () => {
            try {
              return await client.publish('orders', `after the restore ${i}`);
            } catch (err) {
              last = String((err as Error).message);
              return null;
            }
          },
          `publish ${i} after the restore to be acked`,
          scaled(CP_EXPIRY_TIMEOUT_MS * 2.5 + 20_000),
        ).catch(() => null);
        expect(
          acked,
          `publish ${i} after the restore never acked (restored leader ${restoredLeader}); last refusal: ${last}`,
        ).not.toBeNull();
      }
      // The database went back to an older generation; the leader's next report moves it past
      // the one the brokers had reached (generations only grow).
      const moved = await waitFor(
        async () => {
          const a = await ordersOf();
          return a !== undefined && a.generation > handedOff ? a : undefined;
        },
        'the assignment to move past the generation the brokers reached',
        scaled(STEP_MS),
      );
      expect(moved.generation).toBeGreaterThan(handedOff);
      await client.publish('orders', 'after the move');
      await client.close();
    },
    TEST_MS,
  );
});
