/**
 * Queue drain throughput: a Felix consumer group side by side with Redis Streams (XREADGROUP +
 * XACK, ioredis, 127.0.0.1:6379) and a NATS JetStream pull consumer (127.0.0.1:4222), in one run.
 *
 *   npx pnpm@10.34.9 build && node --import tsx scripts/bench/queue/main.ts
 *
 * Each system is loaded with the same N records of 100 bytes, then drained by 1 and by 4
 * consumers: poll up to 100 records, acknowledge each (acks in flight together), repeat until
 * every record is acknowledged. Felix acknowledgements are durable (the group's cursor is written
 * with an fsync before the ack is answered, coalesced across the acks in flight); Redis Streams
 * here acknowledge from memory; JetStream acks are fire-and-forget (`m.ack()`), its default.
 * Also prints the poll -> ack round trip p50/p99 for one consumer taking one record at a time.
 * FELIX_BENCH_QUICK=1 shrinks the counts.
 */
import { connect } from '@felix/client';
import { Redis } from 'ioredis';
import { AckPolicy, connect as natsConnect } from 'nats';
import { latencies, pct, startBenchBroker } from '../cache-broker/broker.js';

const QUICK = process.env.FELIX_BENCH_QUICK === '1';
const N = QUICK ? 2000 : 20_000;
const BATCH = 100;
const PAYLOAD = new Uint8Array(100).fill(7);
const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222';

const rows: string[] = [];
function row(scenario: string, system: string, value: string, note = ''): void {
  rows.push(`| ${scenario} | ${system} | ${value} | ${note} |`);
  console.log(`${scenario.padEnd(34)} ${system.padEnd(24)} ${value.padStart(14)} ${note}`);
}
const rate = (n: number, ms: number) => `${Math.round((n * 1000) / ms).toLocaleString('en-US')}/s`;

/** Runs `consumers` loops of `drainOnce` until `n` records were acknowledged; answers ms. */
async function drain(
  consumers: number,
  n: number,
  drainOnce: () => Promise<number>,
): Promise<number> {
  let acked = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: consumers }, async () => {
      while (acked < n) {
        const got = await drainOnce(); // read-after-await: `acked += await` would lose updates
        acked += got;
      }
    }),
  );
  return performance.now() - t0;
}

// ---- Felix ----
const broker = await startBenchBroker(
  'streams:\n  - { tenant: bench, name: q, durable: true, fsync: none }\n',
);
const felix = await connect({
  servers: [broker.url('tls')],
  tenant: 'bench',
  tls: { fingerprint: broker.fingerprint },
});
console.log(`broker pid ${broker.pid}; Redis 127.0.0.1:6379; NATS ${NATS_URL}; N=${N}\n`);
{
  const pub = felix.publisher('q', { lingerMs: 1 });
  await Promise.all(Array.from({ length: N * 2 }, () => pub.publish(PAYLOAD)));
  for (const [consumers, name] of [
    [1, 'g1'],
    [4, 'g4'],
  ] as const) {
    const group = felix.group('q', name);
    await group.seek('earliest');
    const ms = await drain(consumers, N, async () => {
      const msgs = await group.poll({ max: BATCH, waitMs: 1000 });
      await Promise.all(msgs.map((m) => m.ack()));
      return msgs.length;
    });
    row(
      `drain ${N.toLocaleString('en-US')}, ${consumers} consumer${consumers > 1 ? 's' : ''}`,
      'Felix group (TLS)',
      rate(N, ms),
      'durable cursor',
    );
  }
  const group = felix.group('q', 'one');
  await group.seek('earliest');
  const lat = await latencies(QUICK ? 200 : 2000, async () => {
    const [m] = await group.poll({ max: 1, waitMs: 1000 });
    await m!.ack();
  });
  row(
    'poll 1 + ack, one at a time',
    'Felix group (TLS)',
    `p50 ${Math.round(pct(lat, 50))} µs`,
    `p99 ${Math.round(pct(lat, 99))} µs`,
  );
}
await felix.close();
await broker.stop();

// ---- Redis Streams ----
{
  const redis = new Redis({ host: '127.0.0.1', port: 6379 });
  const key = `felix-bench-q-${Date.now()}`;
  for (let i = 0; i < N * 2; i += 1000) {
    const p = redis.pipeline();
    for (let j = 0; j < 1000; j++) p.xaddBuffer(key, '*', 'p', Buffer.from(PAYLOAD));
    await p.exec();
  }
  for (const consumers of [1, 4]) {
    const group = `g${consumers}`;
    await redis.xgroup('CREATE', key, group, '0');
    const conns = Array.from(
      { length: consumers },
      () => new Redis({ host: '127.0.0.1', port: 6379 }),
    );
    let c = 0;
    const ms = await drain(consumers, N, async () => {
      const r = conns[c++ % consumers]!;
      const res = (await r.xreadgroup(
        'GROUP',
        group,
        `c${c}`,
        'COUNT',
        BATCH,
        'STREAMS',
        key,
        '>',
      )) as [string, [string, string[]][]][] | null;
      const ids = res?.[0]?.[1].map(([id]) => id) ?? [];
      if (ids.length > 0) await r.xack(key, group, ...ids);
      return ids.length;
    });
    row(
      `drain ${N.toLocaleString('en-US')}, ${consumers} consumer${consumers > 1 ? 's' : ''}`,
      'Redis Streams',
      rate(N, ms),
      'in memory',
    );
    for (const r of conns) r.disconnect();
  }
  {
    await redis.xgroup('CREATE', key, 'one', '0');
    const lat = await latencies(QUICK ? 200 : 2000, async () => {
      const res = (await redis.xreadgroup(
        'GROUP',
        'one',
        'c',
        'COUNT',
        1,
        'STREAMS',
        key,
        '>',
      )) as [string, [string, string[]][]][];
      await redis.xack(key, 'one', res[0]![1][0]![0]);
    });
    row(
      'poll 1 + ack, one at a time',
      'Redis Streams',
      `p50 ${Math.round(pct(lat, 50))} µs`,
      `p99 ${Math.round(pct(lat, 99))} µs`,
    );
  }
  await redis.del(key);
  redis.disconnect();
}

// ---- NATS JetStream ----
{
  const nc = await natsConnect({ servers: NATS_URL });
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const name = `FELIXQ${Date.now()}`;
  await jsm.streams.add({ name, subjects: [`${name}.x`] });
  await Promise.all(
    Array.from({ length: 64 }, async (_, w) => {
      for (let i = w; i < N * 2; i += 64) await js.publish(`${name}.x`, PAYLOAD);
    }),
  );
  for (const consumers of [1, 4]) {
    const durable = `g${consumers}`;
    await jsm.consumers.add(name, { durable_name: durable, ack_policy: AckPolicy.Explicit });
    const consumer = await js.consumers.get(name, durable);
    const ms = await drain(consumers, N, async () => {
      const iter = await consumer.fetch({ max_messages: BATCH, expires: 1000 });
      let n = 0;
      for await (const m of iter) {
        m.ack();
        n++;
      }
      return n;
    });
    row(
      `drain ${N.toLocaleString('en-US')}, ${consumers} consumer${consumers > 1 ? 's' : ''}`,
      'JetStream pull',
      rate(N, ms),
      'acks not awaited',
    );
  }
  {
    await jsm.consumers.add(name, { durable_name: 'one', ack_policy: AckPolicy.Explicit });
    const consumer = await js.consumers.get(name, 'one');
    const lat = await latencies(QUICK ? 200 : 2000, async () => {
      const m = await consumer.next({ expires: 1000 });
      await m!.ackAck();
    });
    row(
      'poll 1 + ack, one at a time',
      'JetStream (ackAck)',
      `p50 ${Math.round(pct(lat, 50))} µs`,
      `p99 ${Math.round(pct(lat, 99))} µs`,
    );
  }
  await jsm.streams.delete(name);
  await nc.close();
}

console.log('\n| scenario | system | result | note |\n| --- | --- | ---: | --- |');
console.log(rows.join('\n'));
