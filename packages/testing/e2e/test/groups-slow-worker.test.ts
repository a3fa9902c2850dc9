// Goal: the loop a job-queue user writes first, `for await (const m of group.consume()) { await
// work(m); await m.ack(); }`, with jobs slower than a batch's worth of the claim's visibility, never
// hands the worker a record whose claim lapsed while it waited in the client: no record is worked
// twice, none is redelivered (attempts stay 1, so a healthy worker never walks a record toward its
// dead letter), and every job is done once.
// Found by a review of consume(): a poll claims up to `max` records (100 by default) and a slow
// caller keeps one more poll in flight, so a worker taking 150 ms a job under a 3 s visibility had
// most of its batch lapse in its hands and handed out again, twice over.
// Method: one durable felix-broker process over TLS; a group on a fresh stream; each job's work is
// a 150 ms timer (the job itself, not a synchronisation).
import { type GroupMessage, StaleClaimError } from '@felix/client';
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { suiteBroker } from './support.js';

const JOBS = 40;
const WORK_MS = 150;
const VISIBILITY_MS = 3_000;

describe('a slow worker', () => {
  const suite = suiteBroker('streams:\n  - { tenant: t1, name: slow-jobs, durable: true }\n');

  it('a_slow_worker_never_works_on_a_record_whose_claim_lapsed', async () => {
    const felix = suite.felix;
    for (let i = 0; i < JOBS; i++) await felix.publish('slow-jobs', `job-${i}`);
    const group = felix.group('slow-jobs', 'workers');
    const done = new Map<number, number>();
    const attempts: number[] = [];
    const lapsedInHand: number[] = [];
    await withDeadline(
      (async () => {
        for await (const m of group.consume({
          visibilityMs: VISIBILITY_MS,
        }) as AsyncIterable<GroupMessage>) {
          attempts.push(m.attempts);
          // A worker that keeps its claim while it works (msg.extend names the delivery: a claim
          // that lapsed before the worker got the record is refused stale_claim).
          try {
            await m.extend(VISIBILITY_MS);
          } catch (err) {
            if (!(err instanceof StaleClaimError)) throw err;
            lapsedInHand.push(m.offset);
          }
          await new Promise((r) => setTimeout(r, WORK_MS)); // the job's own work
          done.set(m.offset, (done.get(m.offset) ?? 0) + 1);
          await m.ack();
          if (done.size === JOBS) break;
        }
      })(),
      60_000,
      'every job worked',
    );
    expect(done.size).toBe(JOBS);
    expect(lapsedInHand).toEqual([]);
    expect([...done.values()].filter((n) => n > 1)).toEqual([]);
    expect(attempts.filter((a) => a > 1)).toEqual([]);
  }, 90_000);
});
