// Goal: the test-only fault seams' pieces that need no process: both fault-file parsers never
// throw on any text and count what they ignore; the storage fault Io fails fdatasyncs as its file
// says (every time, or once per generation) and leaves other files alone; the partition aborts a
// control-plane call in flight when the cut appears and fails new ones without sending them; the
// peer links report a cut peer unreachable without dialling it, and a peer-pool link (what
// shipping and forwarding send on) fails unsent without a dial; the partition acknowledges each
// text it put in force; unset variables build nothing.
// Method: the parsers fuzzed with fast-check; FaultFileIo over the real Io in a temp dir; the
// partition and peer links with an injected fetch and probe; the peer pool with an address book
// that records each lookup (a dial starts with one).
import { join } from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import { FaultFileIo, nodeIo, parseStorageFaults } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PeerLinks } from '../src/cluster/peer-links.js';
import { PeerPool } from '../src/cluster/peer-pool.js';
import { loadConfig } from '../src/config/load.js';
import { PartitionedError, PeerUnreachableError } from '../src/errors.js';
import { Partition, parsePartition, partitionedFetch } from '../src/faults/partition.js';
import { storageIoFor } from '../src/faults/storage-faults.js';

const silent = pino({ level: 'silent' });

describe('fault file parsers', () => {
  it('the_fault_file_parsers_never_throw_and_count_the_lines_they_ignore', () => {
    const line = fc.oneof(
      fc.string(),
      fc.constantFrom('fsync=fail', 'fsync=fail_once', 'fsync_delay_ms=5', 'generation=3'),
      fc.constantFrom('controlplane', 'node:b', '# note', '', 'bogus=1', 'node:'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
        const text = lines.join('\n');
        const s = parseStorageFaults(text);
        const p = parsePartition(text);
        expect(s.faults.fsyncDelayMs).toBeGreaterThanOrEqual(0);
        expect(['ok', 'fail', 'fail_once']).toContain(s.faults.fsync);
        expect(s.ignored).toBeGreaterThanOrEqual(lines.filter((l) => l === 'bogus=1').length);
        expect(p.ignored).toBeGreaterThanOrEqual(lines.filter((l) => l === 'bogus=1').length);
        if (lines.includes('controlplane')) expect(p.cut.controlPlane).toBe(true);
      }),
    );
  });

  it('the_fault_file_parsers_read_the_documented_lines', () => {
    expect(
      parseStorageFaults('# x\nfsync_delay_ms=20\nfsync=fail_once\ngeneration=4\nx=1'),
    ).toEqual({ faults: { fsyncDelayMs: 20, fsync: 'fail_once', generation: 4 }, ignored: 1 });
    expect(parseStorageFaults('fsync=sometimes\nfsync_delay_ms=-1').ignored).toBe(2);
    const p = parsePartition('controlplane\n\n# c\nnode:b\nnode:c\nnonsense');
    expect(p.cut.controlPlane).toBe(true);
    expect([...p.cut.peers].sort()).toEqual(['b', 'c']);
    expect(p.ignored).toBe(1);
  });

  it('the_fault_files_are_ignored_when_their_variables_are_unset', async () => {
    const cfg = loadConfig({});
    expect(cfg.testing).toEqual({ storage_fault_file: null, partition_file: null });
    expect(await storageIoFor(cfg.testing.storage_fault_file, silent)).toBeUndefined();
    expect(Partition.fromConfig(cfg.testing.partition_file, silent)).toBeNull();
    const set = loadConfig({
      FELIX_TEST_PARTITION_FILE: '/x',
      FELIX_TEST_STORAGE_FAULT_FILE: '/y',
    });
    expect(set.testing).toEqual({ storage_fault_file: '/y', partition_file: '/x' });
  });
});

describe('storage fault Io', () => {
  it('a_delayed_fsync_is_released_once_the_fault_file_drops_its_delay', async () => {
    const dir = await tempDir();
    try {
      const faults = join(dir.path, 'faults');
      await writeFile(faults, 'fsync_delay_ms=60000\n');
      let now = 0;
      const io = new FaultFileIo(nodeIo, faults, { now: () => now });
      await io.start(); // the minute-long delay is the reading in force
      const seg = await io.open(join(dir.path, '00000000000000000000.log'), 'replace');
      let done = false;
      const syncing = seg.datasync().then(() => {
        done = true;
      });
      // Dropped while the fsync waits, and the reading let go stale: the fsync ends within a
      // poll, not a minute later.
      await writeFile(faults, '');
      now += 50;
      await waitFor(() => done, 'the parked fsync to end', 5_000);
      await syncing;
      await seg.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('the_storage_fault_io_fails_fdatasyncs_as_its_file_says', async () => {
    const dir = await tempDir();
    try {
      const faults = join(dir.path, 'faults');
      let now = 0;
      const io = new FaultFileIo(nodeIo, faults, { now: () => now });
      const seg = await io.open(join(dir.path, '00000000000000000000.log'), 'replace');
      const other = await io.open(join(dir.path, 'durable.mark'), 'replace');
      await seg.datasync(); // no file: no fault
      await writeFile(faults, 'fsync=fail\n');
      await seg.datasync(); // the cached reading is still fresh
      now += 50;
      await expect(seg.datasync()).rejects.toMatchObject({ code: 'EIO', syscall: 'fdatasync' });
      await expect(seg.datasync()).rejects.toMatchObject({ code: 'EIO' });
      await other.datasync(); // only segment files are faulted
      await writeFile(faults, 'fsync=fail_once\ngeneration=1\n');
      now += 50;
      await expect(seg.datasync()).rejects.toMatchObject({ code: 'EIO' });
      await seg.datasync();
      await writeFile(faults, 'fsync=fail_once\ngeneration=2\n');
      now += 50;
      await expect(seg.datasync()).rejects.toMatchObject({ code: 'EIO' });
      await seg.datasync();
      expect(io.injectedFailures).toBe(4);
      await seg.close();
      await other.close();
      // A process started on an unchanged file takes its generation as the baseline: a broker
      // restarted after a fail_once does not fail again until the generation changes.
      const restarted = new FaultFileIo(nodeIo, faults, { now: () => now });
      await restarted.start();
      const again = await restarted.open(join(dir.path, '00000000000000000000.log'), 'write');
      await again.datasync();
      await writeFile(faults, 'fsync=fail_once\ngeneration=3\n');
      now += 50;
      await expect(again.datasync()).rejects.toMatchObject({ code: 'EIO' });
      await again.datasync();
      await again.close();
    } finally {
      await dir.cleanup();
    }
  });
});

describe('test partition', () => {
  it('a_control_plane_cut_aborts_calls_in_flight_and_fails_new_ones_unsent', async () => {
    const p = new Partition('/unused', silent);
    let sent = 0;
    const inner = ((_url: string, init?: RequestInit) => {
      sent++;
      return new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      });
    }) as typeof fetch;
    const gated = partitionedFetch(p, inner);
    const inFlight = gated('http://cp/v1/x');
    p.apply(parsePartition('controlplane\n'));
    await expect(inFlight).rejects.toBeInstanceOf(PartitionedError);
    await expect(gated('http://cp/v1/y')).rejects.toBeInstanceOf(PartitionedError);
    expect(sent).toBe(1);
    p.apply(parsePartition(''));
    void gated('http://cp/v1/z').catch(() => undefined); // left pending: only `sent` matters
    expect(sent).toBe(2);
  });

  it('a_partition_file_is_acknowledged_once_its_cut_is_in_force', async () => {
    const dir = await tempDir();
    const file = join(dir.path, 'partition');
    // Not written yet: undefined, and the wait asks again.
    const applied = () => readFile(`${file}.applied`, 'utf8').catch(() => undefined);
    const p = Partition.fromConfig(file, silent);
    try {
      if (p === null) throw new Error('a set path builds a partition');
      // No file cuts nothing, and that is acknowledged as the empty text.
      await waitFor(async () => (await applied()) === '' || undefined, 'the first reading', 5_000);
      await writeFile(file, 'node:b\n');
      await waitFor(async () => (await applied()) === 'node:b\n' || undefined, 'the cut', 5_000);
      // Acknowledged only after the cut took hold: the broker already refuses the peer.
      expect(p.peerCut('b')).toBe(true);
      await writeFile(file, '');
      await waitFor(async () => (await applied()) === '' || undefined, 'the heal', 5_000);
      expect(p.peerCut('b')).toBe(false);
    } finally {
      p?.stop();
      await dir.cleanup();
    }
  });

  it('a_peer_named_in_the_partition_is_reported_unreachable_without_a_dial', async () => {
    const p = new Partition('/unused', silent);
    const registry = new Registry();
    const dialled: string[] = [];
    const links = new PeerLinks({
      selfId: 'a',
      intervalMs: 1000,
      partition: p,
      registry,
      log: silent,
      probe: (addr) => {
        dialled.push(addr);
        return Promise.resolve(true);
      },
    });
    links.setNodes([
      { nodeId: 'a', clientAddr: 'h:1', advertiseAddr: 'h:1', lifecycle: 'live' },
      { nodeId: 'b', clientAddr: 'h:2', advertiseAddr: 'h:2', lifecycle: 'live' },
      { nodeId: 'c', clientAddr: 'h:3', advertiseAddr: 'h:3', lifecycle: 'live' },
      { nodeId: 'd', clientAddr: 'h:4', advertiseAddr: 'h:4', lifecycle: 'left' },
    ]);
    p.apply(parsePartition('node:b\n'));
    expect(links.dialAllowed('b')).toBe(false);
    expect(links.dialAllowed('c')).toBe(true);
    await links.round();
    expect(dialled).toEqual(['h:3']);
    const text = await registry.metrics();
    expect(text).toContain('felix_broker_peer_reachable{peer="b"} 0');
    expect(text).toContain('felix_broker_peer_reachable{peer="c"} 1');
    expect(text).not.toContain('peer="a"');
    expect(text).not.toContain('peer="d"');
    p.apply(parsePartition(''));
    await links.round();
    await waitFor(
      async () => (await registry.metrics()).includes('felix_broker_peer_reachable{peer="b"} 1'),
      'b reachable again',
      5_000,
    );
  });

  it('a_link_to_a_cut_peer_fails_unsent_without_a_dial', async () => {
    const p = new Partition('/unused', silent);
    const looked: string[] = [];
    const pool = new PeerPool({
      selfId: 'a',
      transport: 'tls',
      cluster: null,
      clientTls: {} as never,
      // No address: a request that passes the gate fails here, before any socket is opened.
      address: (nodeId) => {
        looked.push(nodeId);
        return undefined;
      },
      dialAllowed: (nodeId) => !p.peerCut(nodeId),
      log: silent,
    });
    p.apply(parsePartition('node:b\n'));
    const cut = await pool
      .link('b')
      .request(new Uint8Array(1), 1_000)
      .catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(PeerUnreachableError);
    expect((cut as Error).message).toMatch(/partitioned/);
    expect(looked).toEqual([]);
    // Healed: the same link goes on to its dial (here: to the address lookup, which fails).
    p.apply(parsePartition(''));
    const healed = await pool
      .link('b')
      .request(new Uint8Array(1), 1_000)
      .catch((e: unknown) => e);
    expect((healed as Error).message).toMatch(/no internal address/);
    expect(looked).toEqual(['b']);
    await pool.close();
  });
});
