/**
 * How long a `group_delete` keeps its caller waiting when the group holds many dead letters, on
 * a durable broker (the dead-letter store syncs every write it answers).
 *
 *   npx pnpm@10.34.9 build && node --import tsx scripts/bench/queue/group-delete.ts
 *
 * Publishes FELIX_BENCH_DEAD_LETTERS records (default 5,000) to a durable stream; each round a
 * fresh group takes them all and gives every one up (`deadLetter()`), `describe()` confirms the
 * count, then `delete()` is timed and `describe()` must answer not_found. FELIX_BENCH_ROUNDS
 * (default 3) rounds; prints each round and the median. No peer: this is a before/after figure
 * for one broker path, not a comparison.
 */
import { connect } from '@felix/client';
import { median, startBroker } from '@felix/testing-bench-kit';

const DEAD = Math.max(1, Number(process.env.FELIX_BENCH_DEAD_LETTERS ?? 5000));
const ROUNDS = Math.max(1, Number(process.env.FELIX_BENCH_ROUNDS ?? 3));
/** Records per poll (the broker hands out at most 1,000 a poll). */
const POLL = 1000;

const broker = await startBroker({
  config: 'streams:\n  - { tenant: bench, name: q, durable: true, fsync: onCommit }\n',
});
const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 'bench',
  tls: { fingerprint: broker.fingerprint },
});
try {
  {
    const pub = felix.publisher('q', { lingerMs: 1 });
    await Promise.all(Array.from({ length: DEAD }, (_, i) => pub.publish(Uint8Array.of(i & 0xff))));
  }
  console.log(`broker pid ${broker.pid}; ${DEAD} dead letters per group; ${ROUNDS} round(s)`);
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const group = felix.group('q', `dl-${round}`);
    await group.seek('earliest');
    let given = 0;
    while (given < DEAD) {
      const msgs = await group.poll({ max: POLL, waitMs: 1000 });
      // Given up on together: the dead-letter writes of one page share syncs.
      await Promise.all(msgs.map((m) => m.deadLetter()));
      given += msgs.length;
    }
    const info = await group.describe();
    if (info.deadLetters !== DEAD) throw new Error(`${info.deadLetters} dead letters, not ${DEAD}`);
    const t0 = performance.now();
    const existed = await group.delete();
    const ms = performance.now() - t0;
    if (!existed) throw new Error('the group was not found by its delete');
    const gone = await group.describe().then(
      () => false,
      () => true, // not_found: the group and every dead letter went
    );
    if (!gone) throw new Error('the group outlived its delete');
    times.push(ms);
    console.log(
      `round ${round + 1}: group_delete of ${DEAD} dead letters took ${ms.toFixed(0)} ms`,
    );
  }
  console.log(`median ${median(times).toFixed(0)} ms`);
} finally {
  await felix.close();
  await broker.stop();
}
