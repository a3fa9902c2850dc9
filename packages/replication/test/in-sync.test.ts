/**
 * Goal: the leader's cursor knows when a follower last held its whole log (`caughtUpAtMs`, what
 * promotion's lag window is judged by, docs/replication.md "In-sync followers"): a follower
 * answering every batch under steady writes is caught up as of each batch that reached the tail
 * when it was planned, though it is never level when anyone looks; an idle level follower is
 * caught up at every look; one that stops answering, or answers batches that fall short of the
 * tail, keeps the moment it last held everything.
 * Method: the pure FollowerCursor driven by hand with a made-up clock and the answers a follower
 * would give (no network, no disk).
 */
import { INTERNAL_ERROR } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FollowerCursor, type Shipment } from '../src/leader/follower-cursor.js';

/** The follower's ok answer to `s`: it holds everything the batch carried. */
function okTo(cursor: FollowerCursor, s: Shipment | null): void {
  expect(s?.kind).toBe('records');
  if (s?.kind !== 'records') return;
  cursor.onAnswer(s.correlationId, { kind: 'ok', durableOffset: s.next });
}

describe('in-sync followers', () => {
  it('a_follower_answering_under_steady_writes_is_caught_up_as_of_each_batch_reaching_the_tail', () => {
    const cursor = new FollowerCursor(0);
    let tail = 0;
    for (let nowMs = 1_000; nowMs < 2_000; nowMs += 10) {
      tail += 3;
      const s = cursor.plan({ base: 0, tail }, 1024, nowMs);
      // The leader writes again while the batch is on its way: never level at a look.
      tail += 3;
      expect(cursor.plan({ base: 0, tail }, 1024, nowMs + 5)).toBeNull();
      okTo(cursor, s);
      expect(cursor.confirmed).toBeLessThan(tail);
      expect(cursor.caughtUpAtMs).toBe(nowMs);
    }
  });

  it('an_idle_level_follower_is_caught_up_at_every_look', () => {
    const cursor = new FollowerCursor(0);
    okTo(cursor, cursor.plan({ base: 0, tail: 5 }, 1024, 100));
    expect(cursor.caughtUpAtMs).toBe(100);
    expect(cursor.plan({ base: 0, tail: 5 }, 1024, 7_000)).toBeNull();
    expect(cursor.caughtUpAtMs).toBe(7_000);
    // Without a clock nothing is judged.
    expect(cursor.plan({ base: 0, tail: 5 }, 1024)).toBeNull();
    expect(cursor.caughtUpAtMs).toBe(7_000);
  });

  it('a_follower_that_stops_answering_or_falls_a_batch_behind_keeps_when_it_last_held_everything', () => {
    const cursor = new FollowerCursor(0, 50);
    expect(cursor.caughtUpAtMs).toBe(50);
    okTo(cursor, cursor.plan({ base: 0, tail: 10 }, 1024, 100));
    expect(cursor.caughtUpAtMs).toBe(100);
    // Unanswered: the batch times out, again and again, while the leader writes on.
    for (let nowMs = 200; nowMs < 20_000; nowMs += 500) {
      const s = cursor.plan({ base: 0, tail: 10 + nowMs }, 1024, nowMs);
      cursor.onTimeout(s!.correlationId);
    }
    expect(cursor.caughtUpAtMs).toBe(100);
    // Back, but more than a batch behind: each answer falls short of the tail it was planned at.
    let tail = 50_000;
    for (let nowMs = 20_000; cursor.confirmed + 1024 < tail; nowMs += 10) {
      okTo(cursor, cursor.plan({ base: 0, tail }, 1024, nowMs));
      tail += 100;
      expect(cursor.caughtUpAtMs).toBe(100);
    }
    // A batch that reaches the tail counts again; a gap or refusal answer never does.
    const reaching = cursor.plan({ base: 0, tail }, 1024, 30_000);
    okTo(cursor, reaching);
    expect(cursor.caughtUpAtMs).toBe(30_000);
    const refused = cursor.plan({ base: 0, tail: tail + 1 }, 1024, 31_000)!;
    cursor.onAnswer(refused.correlationId, {
      kind: 'error',
      code: INTERNAL_ERROR.Unavailable,
      expectedOffset: 0,
    });
    expect(cursor.caughtUpAtMs).toBe(30_000);
  });
});
