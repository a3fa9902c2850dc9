// Goal: a subscriber resuming on a replicated shard after a failover is started where the new
// leader's log parted from the history it read, never above it (history.ts). Method: the pure
// parting point over generation maps as leaders and followers record them.
import { describe, expect, it } from 'vitest';
import { type GenerationStartEntry, partingPoint } from '../src/util/log-history.js';

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
});
