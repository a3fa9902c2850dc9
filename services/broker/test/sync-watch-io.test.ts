// Goal: a failed fdatasync under any log of the broker is logged when it happens and counted,
// and a directory whose syncs keep failing (a follower reopening its copy on each request) is
// logged again at most once a minute, with the failures between.
import { join } from 'node:path';
import { FaultyIo, SegmentLog, nodeIo } from '@felix/storage';
import { tempDir, waitFor } from '@felix/testing-harness';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { SYNC_FAILURE_LOG_EVERY_MS } from '../src/limits.js';
import { SyncWatchIo } from '../src/util/sync-watch-io.js';

function captured() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'debug' },
    { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  );
  return { lines, log };
}

describe('sync watch io', () => {
  it('a_failing_fsync_is_counted_every_time_and_logged_once_a_minute_per_directory', async () => {
    const dir = await tempDir();
    try {
      const faulty = new FaultyIo(nodeIo);
      const { lines, log } = captured();
      let counted = 0;
      let now = 1_000_000;
      const io = new SyncWatchIo(faulty, { log, counted: () => counted++, now: () => now });
      const file = await io.open(join(dir.path, 'seg.log'), 'create');
      const sync = () =>
        file.datasync().then(
          () => 'synced',
          (e: unknown) => (e as NodeJS.ErrnoException).code,
        );
      faulty.failDatasyncs('EIO', { times: 3 });
      expect([await sync(), await sync()]).toEqual(['EIO', 'EIO']);
      expect(counted).toBe(2);
      const failed = () => lines.filter((l) => String(l.msg).startsWith('fsync failed'));
      expect(failed()).toHaveLength(1);
      expect(failed()[0]).toMatchObject({ level: 50, path: join(dir.path, 'seg.log') });
      now += SYNC_FAILURE_LOG_EVERY_MS;
      expect(await sync()).toBe('EIO');
      expect(failed()).toHaveLength(2);
      expect(failed()[1]).toMatchObject({ failures_since_last_line: 1 });
      expect(await sync()).toBe('synced');
      expect(counted).toBe(3);
      await file.close();
    } finally {
      await dir.cleanup();
    }
  });

  it('a_failed_fsync_of_a_preallocation_step_is_counted_and_logged_as_it_poisons_the_log', async () => {
    // Preallocation is on by default: once a segment takes writes, zeros are written ahead of
    // its data and fdatasynced (IoFile.preallocate). That sync failing poisons the log exactly as
    // a failed flush does (durable-storage.md), so it is one of the "fdatasyncs that failed under
    // any log" felix_broker_storage_sync_failures_total counts.
    const dir = await tempDir();
    try {
      const faulty = new FaultyIo(nodeIo);
      const { lines, log: logger } = captured();
      let counted = 0;
      const io = new SyncWatchIo(faulty, { log: logger, counted: () => counted++ });
      const log = await SegmentLog.open({
        root: dir.path,
        shard: { tenant: 't', namespace: 'ns', stream: 's', shard: 0 },
        fsync: 'periodic',
        flushIntervalMs: 60_000,
        io,
      });
      faulty.failPreallocation('sync');
      await log.append([new Uint8Array(100)]);
      await waitFor(() => log.poisoned, 'the failed preallocation sync to poison the log');
      // The log is poisoned by the injected fault: its close fails with the poison.
      await log.close().catch(() => undefined);
      const failed = lines.filter((l) => String(l.msg).startsWith('fsync failed'));
      expect({ counted, logged: failed.length }).toEqual({ counted: 1, logged: 1 });
    } finally {
      await dir.cleanup();
    }
  });
});
