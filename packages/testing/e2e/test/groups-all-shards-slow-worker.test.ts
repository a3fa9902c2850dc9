// Goal: the loop a job-queue user writes over every shard of a stream, `for await (const m of
// felix.group(s, g, { shard: 'all' }).consume({ visibilityMs })) { await work(m); await m.ack(); }`,
// keeps the promise a one-shard loop keeps (docs/queues.md, "A slow worker is never handed a
// lapsed claim"): with each job well inside the claim (0.6 s of a 1.5 s claim), the worker is never
// handed a record whose claim lapsed while it waited in the client, no record is worked twice and
// none is redelivered (attempts stay 1, so a healthy worker never walks a record toward its dead
// letter). packages/client/README.md: "Each shard's loop polls ahead as a one-shard loop does".
// Found in a trial of queues: the merged loop keeps one `next()` out on every shard's loop, and a
// record a shard's loop yielded to it waits there, its claim running, while the caller works
// through the other shards' records (S - 1 jobs): past a third of the claim nothing releases it,
// so with 4 shards and 0.6 s jobs (the trial used 1.2 s jobs under a 3 s claim) every round's last records lapse in the worker's hands, go out
// again to the next poll and come back to the same worker with attempts 2, 3, 4...
// Method: one durable felix-broker process over TLS; a 4-shard stream; each job's work is a
// 0.6 s timer (the job itself, not a synchronisation).
import { type GroupMessage, StaleClaimError } from '@felix/client';
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { suiteBroker } from './support.js';

const SHARDS = 4;
const PER_SHARD = 2;
const WORK_MS = 600;
const VISIBILITY_MS = 1_500;

describe('a slow worker over every shard', () => {
  const suite = suiteBroker(
    `streams:\n  - { tenant: t1, name: slow-orders, durable: true, shards: ${SHARDS} }\n`,
  );

  it('a_slow_worker_over_every_shard_never_works_on_a_record_whose_claim_lapsed', async () => {
    const felix = suite.felix;
    // Keyed records until every shard holds PER_SHARD of them (and some hold more).
    const perShard = new Map<number, number>();
    let jobs = 0;
    for (let i = 0; [...perShard.values()].filter((n) => n >= PER_SHARD).length < SHARDS; i++) {
      const { shard } = await felix.publish('slow-orders', `job-${i}`, { key: `customer-${i}` });
      perShard.set(shard!, (perShard.get(shard!) ?? 0) + 1);
      jobs++;
    }
    const group = felix.group('slow-orders', 'workers', { shard: 'all' });
    const done = new Map<string, number>();
    const attempts: number[] = [];
    const lapsedInHand: string[] = [];
    await withDeadline(
      (async () => {
        for await (const m of group.consume({
          visibilityMs: VISIBILITY_MS,
        }) as AsyncIterable<GroupMessage>) {
          const id = `${m.shard}@${m.offset}`;
          attempts.push(m.attempts);
          // A worker that keeps its claim while it works (msg.extend names the delivery: a claim
          // that lapsed before the worker got the record is refused stale_claim).
          try {
            await m.extend(VISIBILITY_MS);
          } catch (err) {
            if (!(err instanceof StaleClaimError)) throw err;
            lapsedInHand.push(id);
          }
          await new Promise((r) => setTimeout(r, WORK_MS)); // the job's own work
          done.set(id, (done.get(id) ?? 0) + 1);
          await m.ack();
          if (done.size === jobs) break;
        }
      })(),
      jobs * WORK_MS * 3 + 30_000,
      'every job worked',
    );
    expect(done.size).toBe(jobs);
    expect(lapsedInHand).toEqual([]);
    expect([...done.entries()].filter(([, n]) => n > 1)).toEqual([]);
    expect(attempts.filter((a) => a > 1)).toEqual([]);
  }, 180_000);
});
