// Goal: a poison job that crashes its worker process every time (an OOM, a native fault, an
// uncaught throw outside the job's try) ends in the dead letters alone. docs/queues.md, "A poison
// record does not stop the queue": a record whose `groups.max_attempts` deliveries all failed is
// a dead letter, and "a delivery the application never saw does not count"; "a worker that
// crashed mid-batch therefore resumes its own records in one round trip".
// Found in a trial of queues: a consume loop claims a whole poll's records at once (`max`, 100
// by default) and yields them one by one. The worker dies on the poison record with the rest of
// the batch claimed but never yielded; its restart (a named consumer) reclaims the whole batch,
// each record as a new delivery, attempts + 1, and yields the poison record first again. After
// `max_attempts` crashes every record of that batch has five counted deliveries and is dead
// lettered with the poison one, though the application never saw any of them: here 8 good jobs
// of 9 in the dead letters, with the default `max` up to a hundred.
// Method: one durable felix-broker process; the worker is a separate node process using
// @felix/client with a consumer name, which exits at once (no loop end, no hand-back) on the
// poison job; the test starts it again until the group has finished every record.
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { suiteBroker } from './support.js';

/** A worker as a user writes it; "poison" kills its process. Prints each job it finished. */
const WORKER = `
import { connect } from '@felix/client';
const [url, fingerprint] = process.argv.slice(1);
const felix = await connect({ servers: [url], tenant: 't1', tls: { fingerprint },
  reconnect: { baseMs: 20, maxDelayMs: 200 } });
const group = felix.group('poison-jobs', 'workers', { consumer: 'worker-1' });
for await (const m of group.consume()) {
  const job = new TextDecoder().decode(m.payload);
  if (job === 'poison') process.exit(3); // the job takes its process down
  await m.ack();
  console.log(job);
}
`;

const E2E_DIR = resolve(import.meta.dirname, '..');
const MAX_ATTEMPTS = 5; // groups.max_attempts, the default

describe('a poison job that crashes its worker', () => {
  const suite = suiteBroker('streams:\n  - { tenant: t1, name: poison-jobs, durable: true }\n');

  function startWorker(): { child: ChildProcess; done: string[]; exited: Promise<number | null> } {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', WORKER, suite.broker.url('tls'), suite.broker.fingerprint],
      { cwd: E2E_DIR, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const done: string[] = [];
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      done.push(...lines);
    });
    const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
    return { child, done, exited };
  }

  it('a_worker_crash_looping_on_a_poison_job_dead_letters_that_job_alone', async () => {
    const felix = suite.felix;
    const group = felix.group('poison-jobs', 'workers');
    await group.seek('latest');
    const good: string[] = [];
    const { offset: poison } = await felix.publish('poison-jobs', 'poison');
    for (let i = 0; i < 8; i++) {
      good.push(`good-${i}`);
      await felix.publish('poison-jobs', `good-${i}`);
    }
    // The worker dies on the poison job, once per delivery the attempt bound allows.
    for (let crash = 1; crash <= MAX_ATTEMPTS; crash++) {
      const w = startWorker();
      expect(await w.exited, `crash ${crash}`).toBe(3);
    }
    // The next start finds the poison job given up on and works through the rest.
    const w = startWorker();
    const finished: string[] = [];
    try {
      await waitFor(
        async () => {
          // The worker prints a job after its ack lands, so the group can finish before the
          // last line crosses the pipe: wait for both.
          if (w.done.length < good.length) return false;
          const info = await group.describe();
          return info.committed === info.tail && info.inFlight === 0;
        },
        'the group to finish every record and the worker to report each',
        30_000,
      );
      finished.push(...w.done);
    } finally {
      w.child.kill('SIGKILL');
      await w.exited;
    }
    expect(await group.deadLetters()).toEqual([poison]);
    expect(finished.sort()).toEqual(good);
  }, 120_000);
});
