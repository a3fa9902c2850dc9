/**
 * A broker that starts on an empty data directory (a lost volume, a replaced disk, a pod moved
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
 */
import { readdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import {
  FRESH_STORAGE_DOWN_GRACE_MS,
  FRESH_STORAGE_POLL_MS,
  FRESH_STORAGE_WAIT_MS_MAX,
} from '../limits.js';

/** Whether `dir` is absent or empty (checked before the broker creates anything in it). */
export async function isFreshDataDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
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
