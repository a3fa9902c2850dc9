/**
 * The first loop a newcomer writes, from each client's README, side by side in one run: a
 * fire-and-forget publish loop of 1 KiB records to an in-memory stream, read by a plain
 * `for await` subscriber on another connection; against the nats.js loop (`nc.publish` in a
 * loop, `for await (const m of sub)`). Defaults only, no batching options. Reports the publish
 * rate (first publish until the loop's promises settle, or NATS's flush) and how many records
 * the subscriber had when all were in or nothing more came for a second.
 *
 *   node --import tsx scripts/bench/natural/main.ts   (FELIX_BENCH_N, FELIX_BENCH_ROUNDS)
 *
 * Issue 20's other natural rows (acked bursts, cache loops, consume-and-ack one at a time) are
 * still to come.
 */
import { connect as felixConnect } from '@felix/client';
import { markdownTable, median, startBroker } from '@felix/testing-bench-kit';
import { connect as natsConnect } from 'nats';

const N = Number(process.env.FELIX_BENCH_N ?? 100_000);
const ROUNDS = Number(process.env.FELIX_BENCH_ROUNDS ?? 3);
const QUIET_MS = 1_000;
const POLL_MS = 20;
const data = new Uint8Array(1024).fill(7);
const pause = () => new Promise((r) => setTimeout(r, POLL_MS));

/** Counts arrivals; `settled` waits until N are in or none came for QUIET_MS. */
function counter() {
  const c = {
    got: 0,
    last: Date.now(),
    hit() {
      c.got++;
      c.last = Date.now();
    },
    async settled(): Promise<number> {
      while (c.got < N && Date.now() - c.last < QUIET_MS) await pause();
      return c.got;
    },
  };
  return c;
}

const broker = await startBroker({ config: 'streams:\n  - { tenant: t1, name: natural }\n' });
const nc = await natsConnect({ servers: '127.0.0.1:4222' });
const rows: Array<{ system: string; rate: number; got: number }> = [];

async function subscriptions(): Promise<number> {
  const line = (await broker.metricsText())
    .split('\n')
    .find((l) => l.startsWith('felix_broker_subscriptions '));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function felixRound(): Promise<void> {
  const opts = { tenant: 't1', tls: { fingerprint: broker.fingerprint } };
  const pub = await felixConnect({ servers: [broker.url('tls')], ...opts });
  const sub = await felixConnect({ servers: [broker.url('tls')], ...opts });
  const c = counter();
  const before = await subscriptions();
  const reading = (async () => {
    for await (const _ev of sub.subscribe('natural', { from: 'latest', shard: 0 })) {
      c.hit();
      if (c.got >= N) return;
    }
  })();
  while ((await subscriptions()) <= before) await pause();
  const t0 = performance.now();
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < N; i++) sent.push(pub.publish('natural', data, { ack: false }));
  await Promise.all(sent);
  const rate = N / ((performance.now() - t0) / 1000);
  c.last = Date.now();
  const got = await c.settled();
  rows.push({ system: 'Felix TLS, publish(ack: false) loop', rate, got });
  await pub.close();
  await sub.close();
  await reading.catch(() => undefined); // closing the client ends the subscription either way
}

async function natsRound(): Promise<void> {
  const subNc = await natsConnect({ servers: '127.0.0.1:4222' });
  const c = counter();
  const sub = subNc.subscribe('natural');
  const reading = (async () => {
    for await (const _m of sub) c.hit();
  })();
  await subNc.flush();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) nc.publish('natural', data);
  await nc.flush();
  const rate = N / ((performance.now() - t0) / 1000);
  c.last = Date.now();
  const got = await c.settled();
  rows.push({ system: 'NATS core, nc.publish loop', rate, got });
  sub.unsubscribe();
  await reading;
  await subNc.close();
}

for (let r = 0; r < ROUNDS; r++) {
  await natsRound();
  await felixRound();
  const pair = rows.slice(-2);
  const line = pair.map((x) => `${x.system} ${Math.round(x.rate)}/s, got ${x.got}/${N}`);
  console.log(`round ${r + 1}: ${line.join('; ')}`);
}
const of = (s: string) => rows.filter((x) => x.system.startsWith(s));
console.log(
  `\n${markdownTable(
    ['loop', 'publish rate, median', 'received, each round'],
    ['NATS', 'Felix'].map((s) => [
      of(s)[0]!.system,
      `${Math.round(median(of(s).map((x) => x.rate))).toLocaleString('en-US')} msgs/s`,
      of(s)
        .map((x) => `${x.got}/${N}`)
        .join(', '),
    ]),
  )}`,
);
await nc.close();
await broker.stop();
