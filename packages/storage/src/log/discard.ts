/**
 * Removing a deleted shard's directory (a stream or cache deleted from the catalog): the caller
 * closes every log open in it first; the directory is then renamed aside in one step, to a
 * `.deleted-` name in the same parent, and the parent synced, so from then on a log opened at the
 * shard's path starts empty, whatever happens to the removal of the files. The tree aside is
 * removed afterwards (in the background); one a crash or a failed removal left behind is removed
 * by `sweepDiscarded` when the broker starts again. No log ever opens a `.deleted-` directory:
 * shard directory names never start with a dot (layout.ts).
 */
import { join } from 'node:path';
import type { Io } from '../io/io.js';
import { type ShardId, shardDirName } from './layout.js';

/** What a shard directory renamed aside is called before its name. */
export const DISCARDED_PREFIX = '.deleted-';

let discards = 0;

/**
 * Renames `shard`'s directory under `root` aside (durably: the parent is synced) and answers
 * where it went, or null when there was none. The caller removes the tree aside.
 */
export async function discardShardDir(
  io: Io,
  root: string,
  shard: ShardId,
): Promise<string | null> {
  const name = shardDirName(shard);
  const dir = join(root, name);
  if (!(await io.exists(dir))) return null;
  // Unique within the parent: a name deleted, created and deleted again goes aside twice.
  const stamp = `${Date.now().toString(36)}-${process.pid.toString(36)}-${(discards++).toString(36)}`;
  const aside = join(root, `${DISCARDED_PREFIX}${name}-${stamp}`);
  await io.rename(dir, aside);
  await io.syncDir(root);
  return aside;
}

/** Removes every tree a discard left aside under `root` (none: nothing); answers their paths. */
export async function sweepDiscarded(io: Io, root: string): Promise<string[]> {
  if (!(await io.exists(root))) return [];
  const removed: string[] = [];
  for (const name of await io.readdir(root)) {
    if (!name.startsWith(DISCARDED_PREFIX)) continue;
    const path = join(root, name);
    await io.removeTree(path);
    removed.push(path);
  }
  return removed;
}
