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

  it('a_seek_leaves_a_claimed_redriven_record_owed', () => {
    // Before, the seek voided the claim of a redriven dead letter and it was neither owed nor
    // listed: undeliverable until a restart, then delivered long after the seek.
    const st = new GroupState(0, undefined, 100, 0);
    st.redriven.add(3);
    st.claim(3, 1, 100);
    st.claim(5, 1, 100);
    st.reset(20);
    expect(st.claims.size).toBe(0);
    expect([...st.owed]).toEqual([[3, 1]]);
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
  it('a_reclaim_reserves_a_members_claims_from_its_other_connections_lowest_first', () => {
    const st = new GroupState(0, undefined, 100, 0);
    const old = { name: 'w1', conn: {} };
    const other = { name: 'w2', conn: old.conn };
    st.claim(7, 1, 500, old);
    st.claim(3, 2, 400, old);
    st.claim(5, 1, 500, other); // another member on the same connection
    st.claim(6, 1, 500); // anonymous
    const fresh = { name: 'w1', conn: {} };
    expect(st.reclaim(fresh)).toBe(2);
    expect(st.nextReserved(fresh.conn)).toMatchObject({ offset: 3, attempts: 2, deadline: 400 });
    expect(st.nextReserved(fresh.conn)).toMatchObject({ offset: 7, attempts: 1 });
    expect(st.nextReserved(fresh.conn)).toBeUndefined();
    // Reserved claims keep their deadlines: one nobody picks up lapses as any other.
    expect(st.expire(400)).toBe(1);
    expect(st.owed.get(3)).toBe(2);
    expect(st.claims.get(5)?.member).toBe('w2');
  });

  it('a_connection_reclaims_for_a_member_only_once_and_skips_settled_reservations', () => {
    const st = new GroupState(0, undefined, 100, 0);
    const a = { name: 'w1', conn: {} };
    st.claim(1, 1, 500, a);
    st.claim(2, 1, 500, a);
    const b = { name: 'w1', conn: {} };
    expect(st.reclaim(b)).toBe(2);
    st.finish(1); // settled while reserved: dropped when its turn comes
    expect(st.nextReserved(b.conn)?.offset).toBe(2);
    // The original connection takes a new record; b asking again reclaims nothing.
    st.claim(3, 1, 500, a);
    expect(st.reclaim(b)).toBe(0);
    expect(st.nextReserved(b.conn)).toBeUndefined();
    // A third connection under the same name still may, from both older ones.
    const c = { name: 'w1', conn: {} };
    expect(st.reclaim(c)).toBe(2);
    expect(st.nextReserved(c.conn)?.offset).toBe(2);
    expect(st.nextReserved(c.conn)?.offset).toBe(3);
  });

  it('records_retention_skipped_are_reported_once_by_the_next_new_record', () => {
    const st = new GroupState(0, undefined, 100, 0);
    st.next = 4;
    expect(st.skipTo(10)).toBe(6);
    expect(st.skipTo(8)).toBe(0); // already past it
    expect(st.takeSkipped()).toBe(6);
    expect(st.takeSkipped()).toBe(0);
    st.skipTo(12);
    st.reset(20); // a seek forgets what was skipped before it
    expect(st.takeSkipped()).toBe(0);
  });

  it('a_group_state_holds_what_a_reload_loses_while_a_count_ack_or_skip_would_be_lost', () => {
    const st = new GroupState(0, 0, 100, 0);
    expect(st.holdsUnrebuildable()).toBe(false);
    st.owed.set(0, 0); // handed back uncounted: a load hands it out at attempt 1 too
    expect(st.holdsUnrebuildable()).toBe(false);
    st.owed.set(1, 2); // a load would count its deliveries from 1 again
    expect(st.holdsUnrebuildable()).toBe(true);
    st.owed.delete(1);
    st.finish(3); // finished above the position: a load would deliver it again
    expect(st.holdsUnrebuildable()).toBe(true);
    st.finish(0);
    st.finish(1);
    st.finish(2);
    expect(st.holdsUnrebuildable()).toBe(false);
    st.skipTo(10); // a retention skip the next new record reports; a load from a cursor
    // written past it would not
    expect(st.holdsUnrebuildable()).toBe(true);
    st.takeSkipped();
    expect(st.holdsUnrebuildable()).toBe(false);
  });
});
