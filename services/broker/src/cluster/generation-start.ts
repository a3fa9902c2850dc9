/**
 * A new leader's generation start (docs/replication.md, "Generation starts"): a broker opening a
 * `quorum` shard as its new leader over a non-empty log appends a generation-start record (once
 * per generation), ships it like any record, and serves the shard only once a majority holds it.
 * Its commit mark counts only through that record (CommitMark's `countFrom`), so the records it
 * inherited past the old mark commit, and become visible, together with it, never before: a
 * record a reader saw can no longer be dropped by a later leader (Raft's "Figure 8").
 */
import type { SegmentLog } from '@felix/storage';
import { GENERATION_START_COMMIT_DEADLINE_MS } from '../limits.js';

export interface NewLeaderMark {
  /** The offset of this generation's first record (its generation start). */
  countFrom: number;
  /** What the fence answers said was committed (never above `countFrom`). */
  commitStart: number;
}

export interface GenerationStartOpen {
  log: SegmentLog;
  generation: number;
  /** Where the generation's records start (the generations file) and the fence answers' mark. */
  fence: { start: number; commitStart: number };
  /** Starts shipping with the new leader's mark; `onMark` hears each move of it. */
  ship(mark: NewLeaderMark, onMark: (offset: number) => void): Promise<void>;
  deadlineMs?: number;
}

/**
 * Appends the generation-start record unless this generation already wrote one (an open tried
 * again), ships, and resolves true once a majority holds it, false after the deadline.
 */
export async function openThroughGenerationStart(o: GenerationStartOpen): Promise<boolean> {
  const { log, fence } = o;
  // Nothing of this generation is written yet: its first record is the generation start.
  if (log.tailOffset === fence.start) await log.appendGenerationStart(o.generation);
  let heard: (held: boolean) => void = () => undefined;
  const decided = new Promise<boolean>((resolve) => {
    heard = resolve;
  });
  const timer = setTimeout(() => heard(false), o.deadlineMs ?? GENERATION_START_COMMIT_DEADLINE_MS);
  try {
    const mark = { countFrom: fence.start, commitStart: Math.min(fence.commitStart, fence.start) };
    // The mark moves only once a majority holds the generation start, and then past it.
    await o.ship(mark, (offset) => {
      if (offset > fence.start) heard(true);
    });
    return await decided;
  } finally {
    clearTimeout(timer);
  }
}
