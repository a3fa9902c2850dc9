/**
 * Truncation of a closed log's tail: removes every record at or above `offset`, which is how
 * a follower drops an uncommitted suffix that diverges from its new leader's log (and an old
 * leader, back as a follower, drops what it wrote but never got a majority for). Never at or
 * below the commit offset the caller names (BelowCommitError).
 *
 * It runs on a closed log, under the directory lock, as recovery does (and recovery runs
 * first, so it starts from a clean tail): delete whole segments that start at or above
 * `offset`, newest first with a directory sync after each (oldest first, a crash could leave a
 * hole), then cut the segment holding `offset` at that record's first byte and sync it. A
 * crash at any step leaves a prefix of the old log no shorter than `offset`, and truncating
 * again finishes the job. The next open rebuilds the cut segment's index (the newest segment's
 * index always is) and rewrites `durable.mark` before any write; a mark left naming bytes past
 * the cut is harmless until then, because recovery consults it only about damage, and a cleanly
 * cut segment has none.
 */
import { join } from 'node:path';
import { assert } from '@felix/common';
import { BelowCommitError, TruncateBelowBaseError } from '../errors.js';
import type { Io } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { lockDir } from '../lock/dir-lock.js';
import { SEGMENT_HEADER_BYTES } from '../segment/format.js';
import { scanSegment } from '../segment/scan.js';
import { indexPath, segmentPath, shardDirName } from './layout.js';
import { type LogOptions, normalizeLogOptions } from './log-options.js';
import { type RecoveredSegment, applyRecovery, planRecovery } from './recovery.js';

export interface TruncateResult {
  /** The log's tail after the truncation (the target, or the old tail when it was lower). */
  tail: number;
  /** Records removed. */
  removed: number;
  /** Whole segment files deleted. */
  segmentsDeleted: number;
}

/**
 * Removes every record at or above `offset` from the closed log `opts` names. `commitOffset`
 * is the replica's commit offset: a target below it is refused and nothing changes.
 */
export async function truncateLogAbove(
  opts: LogOptions,
  offset: number,
  floor: { commitOffset: number },
): Promise<TruncateResult> {
  const cfg = normalizeLogOptions(opts);
  const io = opts.io ?? nodeIo;
  const dir = join(opts.root, shardDirName(opts.shard));
  if (offset < floor.commitOffset) throw new BelowCommitError(dir, offset, floor.commitOffset);
  const lock = await lockDir(dir, { io });
  try {
    const plan = await planRecovery(io, dir, { indexSpacingBytes: cfg.indexSpacingBytes });
    await applyRecovery(io, plan);
    const segs = plan.segments;
    const base = segs[0]?.baseOffset ?? 0;
    const tail = segs[segs.length - 1]?.nextOffset ?? 0;
    if (offset >= tail) return { tail, removed: 0, segmentsDeleted: 0 };
    if (offset < base) throw new TruncateBelowBaseError(dir, offset, base);
    // The segment holding `offset` is the last that starts at or below it.
    let keep = segs.length - 1;
    while (segs[keep]!.baseOffset > offset) keep--;
    for (let i = segs.length - 1; i > keep; i--) await deleteSegment(io, dir, segs[i]!.id);
    await cutSegment(io, dir, segs[keep]!, offset);
    return { tail: offset, removed: tail - offset, segmentsDeleted: segs.length - 1 - keep };
  } finally {
    await lock.release();
  }
}

async function deleteSegment(io: Io, dir: string, id: number): Promise<void> {
  // The index first: a segment without its index is rebuilt, an index without a segment is not
  // looked at, so either order is safe; this one never leaves an orphan index behind.
  if (await io.exists(indexPath(dir, id))) await io.unlink(indexPath(dir, id));
  await io.unlink(segmentPath(dir, id));
  await io.syncDir(dir);
}

/** Cuts `seg` at the first byte of the record at `offset` (at its header's end at its base). */
async function cutSegment(
  io: Io,
  dir: string,
  seg: RecoveredSegment,
  offset: number,
): Promise<void> {
  const file = await io.open(segmentPath(dir, seg.id), 'write');
  try {
    let at = SEGMENT_HEADER_BYTES;
    if (offset > seg.baseOffset) {
      // Scan from the nearest index entry below; recovery has just checked these records.
      const start = seg.index.lookup(offset);
      at = -1;
      await scanSegment(file, seg.bytes, {
        position: start.position,
        expectedOffset: start.offset,
        version: seg.version,
        onRecord: (_b, _v, _at, head, position) => {
          if (head.offset === offset) at = position;
        },
      });
      assert(at >= 0, `record ${offset} not found in segment ${seg.id} of ${dir}`);
    }
    await file.truncate(at);
    await file.datasync();
  } finally {
    await file.close();
  }
}
