// Goal: a subscriber resuming on a replicated shard after a failover is started where the new
// leader's log parted from the history it read, never above it (history.ts). Method: the pure
// parting point over generation maps as leaders and followers record them.
import { describe, expect, it } from 'vitest';
import { type GenerationStartEntry, partingPoint, resumeParting } from '../src/util/log-history.js';

const log = (...starts: Array<[number, number]>): GenerationStartEntry[] =>
  starts.map(([generation, start]) => ({ generation, start }));

describe('where a log parted from a subscriber history', () => {
  it('a_resume_is_started_where_the_log_parted_from_the_history_it_names', () => {
    // The reader read generation 1's leader up to 25; the new leader holds 1's records to 20 and
    // wrote its own from there: the records 20..24 it read are gone.
    expect(partingPoint(log([1, 0], [2, 20]), 1, 0)).toBe(20);
    // The same leader again (a reconnect), or a log with no newer generation: nothing parted.
    expect(partingPoint(log([1, 0], [2, 20]), 2, 20)).toBeUndefined();
    expect(partingPoint(log([1, 0]), 1, 0)).toBeUndefined();
    // A follower dates a generation from where its leader's first batch to it began, which may
    // be lower than the leader's own start: the same records, nothing parted.
    expect(partingPoint(log([1, 0], [2, 10], [3, 40]), 2, 15)).toBe(40);
    // A log holding nothing of the reader's generation parted at its start at the latest...
    expect(partingPoint(log([1, 0], [3, 30]), 2, 15)).toBe(15);
    // ... or where a newer generation began below it.
    expect(partingPoint(log([1, 0], [3, 12]), 2, 15)).toBe(12);
  });

  it('a_quorum_shards_resume_never_parts_where_a_bootstrapped_followers_labels_say_it_did', () => {
    // A 5-broker campaign (seed 1391128290): a follower added to the set at generation 2 was
    // sent the shard's log from 0 and dated it all generation 2 (the first generation writes no
    // start record); promoted at 3, it told a reader of generation 1 resuming at 811 that the
    // log parted at 0, and the reader got offsets 0..810 again.
    const promoted = log([2, 0], [3, 811]);
    expect(partingPoint(promoted, 1, 0)).toBe(0);
    // A quorum shard's reader saw only committed records, which every later leader holds.
    const quorum = { generation: 3, start: 811, starts: promoted, committedReads: true };
    expect(resumeParting(quorum, 1, 0)).toBeUndefined();
    // A leader shard's reader may have read records lost in the failover: checked as before.
    const leader = { ...quorum, committedReads: false };
    expect(resumeParting(leader, 1, 0)).toBe(0);
  });
});
