// A broker's judgement of its data dir at start (cluster/fresh-storage.ts): without shard logs
// it is fresh (a volume's lost+found, the lock, name files do not count), the marker keeps it
// fresh across restarts until a wait ends; and the wait itself ends when the shards moved, once
// the node has shown down for the grace, at its deadline, or at a stop.
// Method: real files in a temp directory; the wait with a stand-in table and clock.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeIo } from '@felix/storage';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FAILOVER_WAIT_FILE,
  awaitFailover,
  endFreshWait,
  freshStorageAtStart,
} from '../src/cluster/fresh-storage.js';
import { FRESH_STORAGE_DOWN_GRACE_MS, FRESH_STORAGE_WAIT_MS_MAX } from '../src/limits.js';

const log = pino({ level: 'silent' });

describe('a broker started without its shard logs', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-fresh-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a_data_dir_without_shard_logs_is_fresh_until_a_wait_for_its_failover_ends', async () => {
    const data = join(dir, 'data');
    expect(await freshStorageAtStart(data, nodeIo)).toBe(true);
    expect(await readdir(data)).toEqual([FAILOVER_WAIT_FILE]);
    // What a new volume and a first start leave there is no shard log: still fresh.
    await mkdir(join(data, 'lost+found'));
    await mkdir(join(data, 'names', 'stream'), { recursive: true });
    await writeFile(join(data, 'felix.lock'), '1234');
    await mkdir(join(data, 'streams', 't_ns_jobs_0-abc'), { recursive: true });
    // A shard directory was written, but the wait never ended (a kill): it goes on.
    expect(await freshStorageAtStart(data, nodeIo)).toBe(true);
    await endFreshWait(data, nodeIo);
    expect(await readdir(data)).not.toContain(FAILOVER_WAIT_FILE);
    expect(await freshStorageAtStart(data, nodeIo)).toBe(false);
    // Shard directories gone (every shard deleted) and no marker: fresh again.
    await rm(join(data, 'streams'), { recursive: true });
    expect(await freshStorageAtStart(data, nodeIo)).toBe(true);
  });

  it('the_failover_wait_ends_when_the_shards_moved_the_node_showed_down_or_it_stopped', async () => {
    let now = 0;
    const clock = () => now;
    const stop = new AbortController();
    let led = 2;
    let life: string | undefined = 'live';
    const w = {
      ledWithCopies: () => led,
      lifecycle: () => life,
      refresh: async () => {
        now += 1_000;
      },
      signal: stop.signal,
    };
    expect(await awaitFailover({ ...w, ledWithCopies: () => 0 }, log, clock)).toBe('moved');
    // Moved while it waits.
    setTimeout(() => {
      led = 0;
    }, 300);
    expect(await awaitFailover(w, log, clock)).toBe('moved');
    // Shown down, a shard still led (no follower qualified): it ends after the grace.
    led = 1;
    life = 'down';
    const start = now;
    expect(await awaitFailover(w, log, clock)).toBe('down');
    expect(now - start).toBeGreaterThanOrEqual(FRESH_STORAGE_DOWN_GRACE_MS);
    // Never shown down: the deadline.
    life = 'live';
    w.refresh = async () => {
      now += 30_000;
    };
    expect(await awaitFailover(w, log, clock)).toBe('deadline');
    expect(now).toBeGreaterThanOrEqual(FRESH_STORAGE_WAIT_MS_MAX);
    stop.abort();
    expect(await awaitFailover(w, log, clock)).toBe('stopped');
  });
});
