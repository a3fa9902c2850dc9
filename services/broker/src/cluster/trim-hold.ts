/**
 * Where a leader holds the trims of a log riding with a shard (cache, counters, group cursors,
 * dead letters; docs/replication.md, "State that rides with a shard"). Such a log is compacted
 * by its leader on its own: a pass deletes whole segments below its cut, and a follower whose
 * next record lay below the new base could only be offered a bootstrap, which a follower
 * holding records refuses (its cursor halts `needs_bootstrap`). So the log's retention floor is
 * the lowest offset confirmed by the followers that count as in sync: then the leader's base
 * never passes an in-sync follower, and the storage trims the rest of the cut once the floor
 * rises. A follower halted or stopped never counts; one that held the whole log within the lag
 * window does (as `in_sync` in the replica reports); one never caught up counts for one window
 * from the shipper's start, so a freshly started follower is not left behind at once. A
 * follower out of sync past the window holds nothing: a dead follower never stops compaction.
 */

/** What the leader knows of one follower of a riding log. */
export interface HeldFollower {
  /** One past the last record it confirmed durable. */
  confirmed: number;
  /** When it last held the whole log (performance.now()), or undefined: never yet. */
  caughtUpAtMs: number | undefined;
  /** Its shipping loop stopped (halted, refused, failed): it holds nothing. */
  stopped: boolean;
}

/**
 * The retention floor for a riding log shipped to `followers` by a shipper started at
 * `startedAtMs`, at `nowMs` with a lag window of `windowMs`; undefined (no floor) when no
 * follower counts.
 */
export function trimFloor(
  followers: readonly HeldFollower[],
  nowMs: number,
  startedAtMs: number,
  windowMs: number,
): number | undefined {
  let floor: number | undefined;
  for (const f of followers) {
    if (f.stopped) continue;
    const since = f.caughtUpAtMs ?? startedAtMs;
    if (nowMs - since > windowMs) continue;
    floor = Math.min(floor ?? f.confirmed, f.confirmed);
  }
  return floor;
}
