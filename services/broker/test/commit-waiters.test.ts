/**
 * Goal: a quorum cache log's commit waits: a write is answered once its projection applied it
 * (the mark covered it); one waiting past the timeout is answered `quorum_timeout` (outcome
 * unknown) and is still applied when the mark arrives; a shard no longer served fails every wait,
 * then and later, answered `leadership_lost`; a shard switched to `leader` opens every wait.
 * Method: CommitWaiters with a short timeout and a write that waits on its gate as the storage
 * projection does; the mark is moved by hand; waits are `waitFor`, never sleeps.
 */
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { CommitWaiters } from '../src/caches/commit-waiters.js';
import type { Refusal } from '../src/session/refusal.js';

/** A write whose record ends at `next`: applied once the gate lets it through. */
function gatedWrite(waits: CommitWaiters, next: number, applied: number[]) {
  return async () => {
    await waits.wait(next);
    applied.push(next);
    return next;
  };
}

describe('commit waits of a quorum cache log', () => {
  it('a_quorum_cache_write_past_the_timeout_is_answered_quorum_timeout_and_still_applied_on_the_mark', async () => {
    const outcomes: string[] = [];
    const waits = new CommitWaiters('cache t/ns/c/0', 30, (o) => outcomes.push(o));
    const applied: number[] = [];
    expect(await waits.answer(gatedWrite(waits, 0, applied))).toBe(0);
    const late = await waits.answer(gatedWrite(waits, 2, applied)).catch((e: Refusal) => e);
    expect((late as Refusal).wireCode).toBe('quorum_timeout');
    expect((late as Refusal).wireRetry).toBe('outcome_unknown');
    expect(applied).toEqual([0]);
    const next = waits.answer(gatedWrite(waits, 3, applied));
    waits.advance(3);
    expect(await next).toBe(3);
    expect(applied).toEqual([0, 2, 3]);
    expect(outcomes).toEqual(['committed', 'timeout', 'committed']);
  });

  it('an_abandoned_commit_wait_fails_its_writes_now_and_later_and_leader_consistency_opens_them', async () => {
    const waits = new CommitWaiters('cache t/ns/c/0', 60_000);
    const applied: number[] = [];
    const pending = waits.answer(gatedWrite(waits, 1, applied)).catch((e: Refusal) => e.wireCode);
    await waitFor(() => waits.size === 1, 'the write to wait for the mark');
    waits.abandon();
    expect(await pending).toBe('leadership_lost');
    const after = await waits.answer(gatedWrite(waits, 2, applied)).catch((e: Refusal) => e);
    expect((after as Refusal).wireCode).toBe('leadership_lost');
    expect(applied).toEqual([]);
    const other = new CommitWaiters('cache t/ns/c/1', 60_000);
    const opened = other.answer(gatedWrite(other, 5, applied));
    await waitFor(() => other.size === 1, 'the write to wait for the mark');
    other.open();
    expect(await opened).toBe(5);
  });
});
