// Goal: the harness writes the broker's fault files in the format docs/reliability.md gives
// ("Fault seams in the broker"): a partition names each side in the other's file, a cut from
// the control plane only in the broker's own, heal empties them; fsync faults are key=value
// lines and `once` bumps the generation each time; a bad spec or node is a typed error.
// Method: the fault-file writers on brokers that are never started, files read back; specs
// refused before anything starts.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../src/cluster/broker.js';
import { Partitions, StorageFaults } from '../src/cluster/faults.js';
import { BadClusterSpecError, startCluster, timeoutScale } from '../src/index.js';

const TLS = { certPath: '/nonexistent/cert.pem', keyPath: '/nonexistent/key.pem' };

describe('fault files', () => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
  });

  async function brokers(n: number): Promise<Broker[]> {
    const dir = await tempDir('felix-fault-files-');
    cleanup = dir.cleanup;
    const out: Broker[] = [];
    for (let index = 0; index < n; index++) {
      const nodeDir = join(dir.path, `n${index}`);
      await mkdir(nodeDir);
      out.push(new Broker({ index, dir: nodeDir, tls: TLS, env: {} }));
    }
    return out;
  }

  const read = (path: string) => readFile(path, 'utf8');

  it('a_partition_names_each_side_in_the_others_file_and_heal_empties_them', async () => {
    const bs = await brokers(3);
    const [n0, n1, n2] = bs as [Broker, Broker, Broker];
    const p = new Partitions(bs);
    await p.cut(n0, n1);
    await p.cut(n0, 'controlplane');
    expect(await read(n0.partitionFile)).toBe('controlplane\nnode:n1\n');
    expect(await read(n1.partitionFile)).toBe('node:n0\n');
    await p.cut(n2, n1);
    expect(await read(n1.partitionFile)).toBe('node:n0\nnode:n2\n');
    await p.heal();
    for (const b of bs) expect(await read(b.partitionFile)).toBe('');
  });

  it('fsync_faults_are_key_value_lines_and_each_once_bumps_the_generation', async () => {
    const [b] = (await brokers(1)) as [Broker];
    const s = new StorageFaults();
    await s.slow(b, 250);
    expect(await read(b.storageFaultFile)).toBe('fsync_delay_ms=250\nfsync=ok\ngeneration=0\n');
    await s.fail(b, 'once');
    await s.fail(b, 'once');
    expect(await read(b.storageFaultFile)).toBe(
      'fsync_delay_ms=250\nfsync=fail_once\ngeneration=2\n',
    );
    await s.fail(b, 'always');
    expect(await read(b.storageFaultFile)).toContain('fsync=fail\n');
    await s.heal(b);
    expect(await read(b.storageFaultFile)).toBe('fsync_delay_ms=0\nfsync=ok\ngeneration=2\n');
  });

  it('a_cluster_spec_the_harness_cannot_run_is_refused_with_a_typed_error', async () => {
    await expect(startCluster({ brokers: 0 })).rejects.toBeInstanceOf(BadClusterSpecError);
    await expect(
      startCluster({ brokers: 1, streams: [{ name: 's', shards: 0 }] }),
    ).rejects.toBeInstanceOf(BadClusterSpecError);
    await expect(
      startCluster({
        brokers: 1,
        streams: [
          { name: 'a', shards: 1, groupCursor: 'onCommit' },
          { name: 'b', shards: 1, groupCursor: 'periodic' },
        ],
      }),
    ).rejects.toThrow(/groupCursor/);
    expect(() => timeoutScale({ FELIX_TEST_TIMEOUT_SCALE: 'fast' })).toThrow(BadClusterSpecError);
    expect(timeoutScale({ FELIX_TEST_TIMEOUT_SCALE: '2.5' })).toBe(2.5);
    expect(timeoutScale({})).toBe(1);
  });
});
