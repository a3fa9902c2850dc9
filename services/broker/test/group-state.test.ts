// Goal: the in-memory claim bookkeeping of a consumer group stays exact while claims are
// settled, extended, delayed and lapsed in any order: a claim lapses at its latest deadline
// only, a settled claim never lapses, and rebuilding the deadline heap loses no live claim.
// Method: a GroupState driven with explicit clock values (it has no clock of its own).
import { describe, expect, it } from 'vitest';
import { GroupState } from '../src/groups/group-state.js';
import { GROUP_DEADLINE_HEAP_SLACK } from '../src/limits.js';

describe('group claim bookkeeping', () => {
  it('a_rescheduled_claim_lapses_at_its_new_deadline_only', () => {
    const st = new GroupState(0, undefined, 100, 0);
    st.claim(1, 1, 100);
    st.reschedule(st.claims.get(1)!, 300);
    expect(st.expire(150)).toBe(0);
    expect(st.claims.get(1)?.deadline).toBe(300);
    expect(st.earliestDeadline()).toBe(300);
    expect(st.expire(300)).toBe(1);
    expect([...st.owed]).toEqual([[1, 1]]);
  });

  it('a_settled_claim_never_lapses_afterwards', () => {
    const st = new GroupState(0, undefined, 100, 0);
    st.claim(0, 1, 100);
    st.claim(1, 2, 100);
    expect(st.finish(0)).toBe(true);
    st.release(1);
    expect(st.earliestDeadline()).toBeUndefined();
    expect(st.expire(1_000)).toBe(0);
    expect(st.owed.size).toBe(0);
  });

  it('a_delayed_nack_becomes_owed_without_counting_as_a_lapse', () => {
    const st = new GroupState(0, undefined, 100, 0);
    st.claim(4, 2, 100);
    st.reschedule(st.claims.get(4)!, 50, true);
    expect(st.claims.get(4)?.delayed).toBe(true);
    expect(st.expire(50)).toBe(0);
    expect(st.owed.get(4)).toBe(2);
    expect(st.claims.has(4)).toBe(false);
  });

  it('rebuilding_the_deadline_heap_keeps_every_live_claim', () => {
    const st = new GroupState(0, undefined, 1_000_000, 0);
    // Settle far more claims than stand, so the heap is rebuilt many times over.
    const live: number[] = [];
    for (let o = 0; o < 20 * GROUP_DEADLINE_HEAP_SLACK; o++) {
      st.claim(o, 1, 1_000 + (o % 97));
      if (o % 50 === 0) live.push(o);
      else st.finish(o);
    }
    // Extend every other live claim past the first expiry.
    for (const o of live.filter((_, i) => i % 2 === 0)) st.reschedule(st.claims.get(o)!, 5_000);
    expect(st.expire(2_000)).toBe(live.length / 2);
    expect([...st.owed.keys()].sort((a, b) => a - b)).toEqual(live.filter((_, i) => i % 2 === 1));
    expect(st.expire(5_000)).toBe(live.length / 2);
    expect(st.claims.size).toBe(0);
  });
});
