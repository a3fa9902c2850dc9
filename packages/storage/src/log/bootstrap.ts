/**
 * Bootstrap of a follower's log at its leader's oldest retained offset: a new follower of a
 * log whose head retention has trimmed cannot start at 0, so its empty log is made to start at
 * `base` instead. A log that already starts at `base` is ready as it is (it may hold records
 * from there; shipping resumes from its tail). A log holding any other records is left alone
 * and answered `conflict`: the replication layer halts that follower (needs a rebuild) rather
 * than empty it silently.
 *
 * It runs on a closed log under the directory lock, after recovery: delete the empty segment
 * files (newest first, a directory sync after each), then write a segment holding only a
 * header at `base` under the next segment id and sync it into the directory. A crash between
 * the two leaves no segment, which opens as an empty log at 0; bootstrapping again finishes.
 *
 * A rebuild (`rebuildLogAt`, the leader's answer to that halt) is the one call that discards
 * records: a log whose every record lies below `base` (the leader's retention or compaction
 * already dropped them there) is emptied the same way and made to start at `base`. A log
 * holding anything at or above `base` is left alone (`conflict`): that is a divergence, not a
 * copy left behind. A crash part way leaves an older prefix of the same records (or, after the
 * last delete, an empty log at 0), all below `base`, which the next rebuild finishes.
 */
import { join } from 'node:path';
import type { Io } from '../io/io.js';
import { writeFully } from '../io/io.js';
import { nodeIo } from '../io/node-io.js';
import { lockDir } from '../lock/dir-lock.js';
import { encodeSegmentHeader } from '../segment/format.js';
import { ensureDurableDir, indexPath, segmentPath, shardDirName } from './layout.js';
import { type LogOptions, normalizeLogOptions, nowMicros } from './log-options.js';
import { applyRecovery, planRecovery } from './recovery.js';

export type BootstrapResult =
  /** The log starts at the offered base; its tail is where shipping resumes. */
  | { kind: 'ready'; tail: number }
  /** The log holds records outside what the leader offers: nothing was changed. */
  | { kind: 'conflict'; base: number; tail: number };

export function bootstrapLogAt(opts: LogOptions, base: number): Promise<BootstrapResult> {
  return onRecoveredLog(opts, async (log) => {
    if (log.first === base) return { kind: 'ready', tail: log.tail };
    if (log.tail > log.first) return { kind: 'conflict', base: log.first, tail: log.tail };
    await log.startAt(base);
    return { kind: 'ready', tail: base };
  });
}

/**
 * Empties a follower's log whose records all lie below `base` and makes it start there (see the
 * header); `ready` at once when it already starts there empty, `conflict` (nothing changed)
 * when it holds records at or above `base`.
 */
export function rebuildLogAt(opts: LogOptions, base: number): Promise<BootstrapResult> {
  return onRecoveredLog(opts, async (log) => {
    if (log.tail > base) return { kind: 'conflict', base: log.first, tail: log.tail };
    if (log.first === base && log.segments > 0) return { kind: 'ready', tail: log.tail };
    await log.startAt(base);
    return { kind: 'ready', tail: base };
  });
}

/** A closed log's extent after recovery, under its directory lock, and the one change made here:
 *  every segment deleted (newest first) and an empty one written at `base`. */
interface RecoveredLog {
  first: number;
  tail: number;
  segments: number;
  startAt(base: number): Promise<void>;
}

/** Runs `fn` on the recovered log of `opts` while holding its directory lock. */
async function onRecoveredLog<T>(opts: LogOptions, fn: (log: RecoveredLog) => Promise<T>) {
  const cfg = normalizeLogOptions(opts);
  const io = opts.io ?? nodeIo;
  const dir = join(opts.root, shardDirName(opts.shard));
  await ensureDurableDir(io, dir);
  const lock = await lockDir(dir, { io });
  try {
    const plan = await planRecovery(io, dir, { indexSpacingBytes: cfg.indexSpacingBytes });
    await applyRecovery(io, plan);
    const segs = plan.segments;
    return await fn({
      first: segs[0]?.baseOffset ?? 0,
      tail: segs[segs.length - 1]?.nextOffset ?? 0,
      segments: segs.length,
      startAt: (base) => startAt(io, dir, segs, base),
    });
  } finally {
    await lock.release();
  }
}

/** Deletes `segs` (newest first) and writes an empty segment at `base` under the next id. */
async function startAt(
  io: Io,
  dir: string,
  segs: readonly { id: number }[],
  base: number,
): Promise<void> {
  for (let i = segs.length - 1; i >= 0; i--) await deleteFiles(io, dir, segs[i]!.id);
  const id = (segs[segs.length - 1]?.id ?? -1) + 1;
  await writeEmptySegment(io, dir, id, base);
}

async function deleteFiles(io: Io, dir: string, id: number): Promise<void> {
  if (await io.exists(indexPath(dir, id))) await io.unlink(indexPath(dir, id));
  await io.unlink(segmentPath(dir, id));
  await io.syncDir(dir);
}

/** A segment holding only its header; the open that follows builds its index. */
async function writeEmptySegment(io: Io, dir: string, id: number, base: number): Promise<void> {
  const file = await io.open(segmentPath(dir, id), 'create');
  try {
    const header = encodeSegmentHeader({ baseOffset: base, createdAtMicros: nowMicros() });
    await writeFully(file, header, 0, header.length, 0);
    await file.datasync();
  } finally {
    await file.close();
  }
  await io.syncDir(dir);
}
