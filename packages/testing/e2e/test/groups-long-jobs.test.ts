// Goal: a worker whose jobs outlast the claim, and which keeps each job's claim with
// `msg.extend()` as the docs tell it to, is never handed a job whose `attempts` counts deliveries
// it never saw. docs/queues.md, "A slow worker is never handed a lapsed claim": "the loop holds
// a record at most a third of its claim ... before it yields it: past that, what it has not
// yielded is released (handed back without counting an attempt)", "A delivery the application
// never saw does not count", and "a job longer than the claim calls `msg.extend(ms)`".
// Found in a trial of queues: the loop releases held records only when the caller asks for the
// next one. While a long job runs, the rest of its batch (and what the poll made ahead brings)
// sits in the client until its claims lapse, each lapse counted as a delivery: one worker with
// 1.8 s jobs under a 1.5 s claim saw its second job at attempts 2, its third at 3, and the rest
// at 4, a step from the dead letters (groups.max_attempts 5) without a single failure.
// Method: one durable felix-broker process over TLS; each job extends its own claim, then its
// work is a 1.1 s timer (the job itself, not a synchronisation).
import type { GroupMessage } from '@felix/client';
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { suiteBroker } from './support.js';

const JOBS = 4;
const VISIBILITY_MS = 900;
const WORK_MS = 1_100; // longer than the claim: the job extends it first

describe('a worker whose jobs outlast the claim', () => {
  const suite = suiteBroker('streams:\n  - { tenant: t1, name: long-jobs, durable: true }\n');

  it('jobs_a_consume_loop_holds_while_a_long_job_runs_are_not_counted_as_attempts', async () => {
    const felix = suite.felix;
    const group = felix.group('long-jobs', 'workers');
    await group.seek('latest');
    for (let i = 0; i < JOBS; i++) await felix.publish('long-jobs', `job-${i}`);
    const seen: Array<[number, number]> = [];
    const done = new Set<number>();
    await withDeadline(
      (async () => {
        for await (const m of group.consume({
          visibilityMs: VISIBILITY_MS,
        }) as AsyncIterable<GroupMessage>) {
          seen.push([m.offset, m.attempts]);
          await m.extend(WORK_MS * 3); // the job keeps its own claim, as the docs say
          await new Promise((r) => setTimeout(r, WORK_MS)); // the job's own work
          await m.ack();
          done.add(m.offset);
          if (done.size === JOBS) break;
        }
      })(),
      JOBS * WORK_MS * 3 + 20_000,
      'every job worked',
    );
    // Each job was seen once, on its first delivery the application saw.
    expect(seen.filter(([, attempts]) => attempts > 1)).toEqual([]);
    expect(seen).toHaveLength(JOBS);
  }, 120_000);
});
