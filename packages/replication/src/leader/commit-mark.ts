/**
 * The commit mark of a quorum shard: one past the last record a majority of the generation's
 * replica set holds (as each one's fsync mode acknowledges a write: synced under `onCommit`,
 * written under `periodic`), the leader counted and among them (the mark stops at the
 * leader's own offset). It only moves forward: a member whose
 * confirmed offset is reported late or lower (a new cursor, a restarted follower) cannot pull
 * back what readers may already have seen.
 *
 * A new leader's mark counts only through a record of its own generation (Raft's "Figure 8"):
 * records it inherited past the old mark may be held by a majority and still be dropped by a
 * later leader that never saw them committed, so a majority holding them proves nothing until
 * it also holds the generation's first record (its generation-start record); then everything
 * below that record commits at once.
 */
import { InvalidReplicaSetError } from '../errors.js';
import { REPLICA_SET_SIZE_MAX } from '../limits.js';

/**
 * The highest offset a majority of `setSize` members hold, from the held offsets of the
 * members that reported (members missing from `held` count as holding nothing).
 */
export function majorityHeld(held: readonly number[], setSize: number): number {
  checkSetSize(setSize);
  const majority = Math.floor(setSize / 2) + 1;
  if (held.length < majority) return 0;
  const sorted = [...held].sort((a, b) => b - a).slice(0, setSize);
  return sorted[majority - 1]!;
}

export class CommitMark {
  private mark: number;

  /**
   * `start`: the mark known committed already (a new leader's, from its fence answers);
   * `countFrom`: the offset of this generation's first record, which a majority must hold
   * before the mark moves at all (0: every record counts, as for a leader that wrote its log).
   */
  constructor(
    private readonly setSize: number,
    start = 0,
    private readonly countFrom = 0,
  ) {
    checkSetSize(setSize);
    this.mark = start;
  }

  get offset(): number {
    return this.mark;
  }

  /**
   * Recomputes from every member's held offset, never past `ceiling` (the leader's own:
   * followers may hold records the leader does not hold yet, and a quorum
   * counts the leader among the holders), and only once past `countFrom` (the generation
   * start); returns true when the mark moved.
   */
  advance(held: readonly number[], ceiling = Number.POSITIVE_INFINITY): boolean {
    const m = Math.min(ceiling, majorityHeld(held, this.setSize));
    if (m <= this.mark || m <= this.countFrom) return false;
    this.mark = m;
    return true;
  }
}

function checkSetSize(size: number): void {
  if (!Number.isInteger(size) || size < 1 || size > REPLICA_SET_SIZE_MAX)
    throw new InvalidReplicaSetError(size);
}
