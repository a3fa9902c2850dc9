/**
 * Where a replicated shard's log parted from the history a subscriber or watcher read. Each leader writes
 * from its generation's start offset on; a `leader` shard's records that no follower held when
 * their leader was lost are gone after the failover, and the new leader writes other records at
 * their offsets. A subscriber that read them names the history its cursor belongs to (the
 * serving leader's generation and where its records started), and is started again from the
 * parting point instead of skipping the new records below its cursor (as Kafka's consumers
 * check a fetch position's leader epoch). Pure: no I/O.
 */

/** One generation's first offset in a log (the shard's `generations` file). */
export interface GenerationStartEntry {
  readonly generation: number;
  readonly start: number;
}

/** What a leader knows of its log's history: its own generation, where that generation's
 *  records start, and every generation start the log holds (oldest first). */
export interface ShardHistory {
  readonly generation: number;
  readonly start: number;
  readonly starts: readonly GenerationStartEntry[];
  /** A replicated `quorum` shard: its readers see only committed records (resumeParting). */
  readonly committedReads?: boolean;
}

/**
 * Where a resume naming generation `generation` (started at `start`) parted from this log, as
 * partingPoint, except on a shard whose readers see only committed records (a replicated `quorum`
 * stream shard opened through a fence, `committedReads`): whatever such a reader saw every later leader holds at the same
 * offsets (nothing at or below a commit offset is truncated), so its resume never parts. The
 * generation labels can say otherwise where a follower bootstrapped from an empty log dated the
 * records it was sent by the generation that sent them (no start record marks the shard's first
 * generation): promoted, it told a reader of the first generation that the log parted at 0.
 */
export function resumeParting(
  history: ShardHistory,
  generation: number,
  start: number,
): number | undefined {
  if (history.committedReads === true) return undefined;
  return partingPoint(history.starts, generation, start);
}

/**
 * The offset from which this log no longer holds the history of generation `generation` whose
 * records started at `start` in the log the subscriber read; undefined when it holds all of it.
 * Holding records of that generation, the log matches its leader's up to the next generation's
 * start (one leader per generation, and a follower's copy of a range is byte-checked against
 * it; a follower may date the generation from lower, where that leader's first batch to it
 * began). Not holding it, the log parted at that start at the latest (records below it came from
 * older generations, the same in both logs), or where a newer generation began, if earlier.
 */
export function partingPoint(
  starts: readonly GenerationStartEntry[],
  generation: number,
  start: number,
): number | undefined {
  let above: number | undefined;
  let held = false;
  for (const e of starts) {
    if (e.generation === generation) held = true;
    if (e.generation > generation && (above === undefined || e.start < above)) above = e.start;
  }
  if (held) return above;
  return above === undefined ? start : Math.min(start, above);
}
