/**
 * A broker that starts without its shard logs (a lost volume, a replaced disk, a pod moved
 * without its volume) while the control plane still names it the leader of replicated shards
 * must not lead them: it holds nothing of them, and though a fenced open takes a stream's
 * records back from its followers, the logs that ride with a shard (group cursors, dead
 * letters, a cache's logs) would start over (consumer groups from the first record) or never
 * open (a compacted log's tail cannot be taken from offset 0). So it leaves those shards closed
 * and waits, unregistered, for the control plane to mark it down and fail them over to their
 * followers, as it would for a crashed broker; then it registers as usual and follows them,
 * bootstrapping from their new leaders. Shards with one copy have nowhere else to go and open
 * as before. The wait ends when it leads no replicated shard, when the control plane has shown
 * it down or gone for FRESH_STORAGE_DOWN_GRACE_MS (a shard no follower qualifies for stays with
 * it), or after FRESH_STORAGE_WAIT_MS_MAX.
 *
 * "Without its shard logs" is judged by the log roots (a new volume's `lost+found`, the lock,
 * the name files or a development certificate do not count), and a marker file keeps the wait
 * across restarts: a broker stopped or killed while it waits starts waiting again, though its
 * data dir is no longer empty, until a wait ends.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Io, ensureDurableDir, replaceFileDurably } from '@felix/storage';
import type { Logger } from 'pino';
import {
  FRESH_STORAGE_DOWN_GRACE_MS,
  FRESH_STORAGE_POLL_MS,
  FRESH_STORAGE_WAIT_MS_MAX,
} from '../limits.js';
import { shardLogRoots } from './deleted-shards.js';

/** The marker of a wait not yet ended, in the data dir. */
export const FAILOVER_WAIT_FILE = 'failover-wait';

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Whether the broker starts without shard logs, or with a wait a restart cut short; when it
 * does, the marker is written (durably) before anything else goes into the directory.
 */
export async function freshStorageAtStart(dataDir: string, io: Io): Promise<boolean> {
  if ((await entries(dataDir)).includes(FAILOVER_WAIT_FILE)) return true;
  for (const root of shardLogRoots(dataDir)) if ((await entries(root)).length > 0) return false;
  await ensureDurableDir(io, dataDir);
  await replaceFileDurably(io, dataDir, join(dataDir, FAILOVER_WAIT_FILE), new Uint8Array(0));
  return true;
}

/** The wait ended (not by a stop): later starts judge the directory afresh. */
export async function endFreshWait(dataDir: string, io: Io): Promise<void> {
  const path = join(dataDir, FAILOVER_WAIT_FILE);
  if (!(await io.exists(path))) return;
  await io.unlink(path);
  await io.syncDir(dataDir);
}

export interface FailoverWait {
  /** Replicated shards the assignment feed names this node leader of. */
  ledWithCopies(): number;
  /** This node's lifecycle in the control plane's node book (undefined: not in it). */
  lifecycle(): string | undefined;
  /** Re-reads the node book. */
  refresh(): Promise<void>;
  signal: AbortSignal;
}

/** Resolves once the replicated shards this node leads went to their followers, or the wait
 *  is over (the module comment); answers how it ended. */
export async function awaitFailover(
  w: FailoverWait,
  log: Logger,
  nowMs: () => number = () => performance.now(),
): Promise<'moved' | 'down' | 'deadline' | 'stopped'> {
  const led = w.ledWithCopies();
  if (led === 0) return 'moved';
  log.warn(
    { shards: led, wait_ms_max: FRESH_STORAGE_WAIT_MS_MAX },
    'this broker started on an empty data directory but leads replicated shards: it waits, unregistered, for the control plane to move them to their followers',
  );
  const until = nowMs() + FRESH_STORAGE_WAIT_MS_MAX;
  let downSince: number | null = null;
  for (;;) {
    if (w.signal.aborted) return 'stopped';
    if (w.ledWithCopies() === 0) return 'moved';
    const life = w.lifecycle();
    if (life === 'down' || life === 'left') downSince ??= nowMs();
    else downSince = null;
    if (downSince !== null && nowMs() - downSince >= FRESH_STORAGE_DOWN_GRACE_MS) return 'down';
    if (nowMs() >= until) return 'deadline';
    await new Promise((r) => setTimeout(r, FRESH_STORAGE_POLL_MS));
    await w.refresh();
  }
}
