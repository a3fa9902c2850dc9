/**
 * The two burst rows: a loop of N publishes of 1 KiB to an in-memory stream whose promises are
 * awaited at the end (fire-and-forget `{ ack: false }`, or acked, the default), read by a plain
 * `for await` subscriber on another connection over TLS; against the nats.js loop (`nc.publish`
 * in a loop, then `flush()`, read by `for await (const m of sub)`). The rate runs from the first
 * publish until the loop's promises settle (NATS: its flush); `got` is what the subscriber had
 * when all were in or nothing more came for a second. The judged nats.js loop runs against a
 * nats-server of this run's own with TLS on (tls-peers.ts, `tls: { ca }` on both connections);
 * the shared plaintext server (127.0.0.1:4222) is shown beside.
 */
import type { BenchBroker } from '@felix/testing-bench-kit';
import { type NatsConnection, connect as natsConnect } from 'nats';
import {
  type Ctx,
  DATA,
  NATS_URL,
  type Row,
  type Sample,
  type Side,
  arrivals,
  pause,
} from './kit.js';

/** This run's own subject: another run on the shared nats-server must not feed its subscriber. */
const SUBJECT = `natural.${process.pid}`;

async function subscriptions(broker: BenchBroker): Promise<number> {
  const line = (await broker.metricsText())
    .split('\n')
    .find((l) => l.startsWith('felix_broker_subscriptions '));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/** One round of Felix's loop: connections of its own, as a newcomer's two processes would. */
async function felixBurst(ctx: Ctx, broker: BenchBroker, n: number, ack: boolean): Promise<Sample> {
  const pub = await ctx.felix(broker);
  const sub = await ctx.felix(broker);
  const c = arrivals(n);
  const before = await subscriptions(broker);
  const reading = (async () => {
    for await (const _ev of sub.subscribe('natural', { from: 'latest', shard: 0 })) {
      c.hit();
      if (c.got >= n) return;
    }
  })();
  while ((await subscriptions(broker)) <= before) await pause();
  const t0 = performance.now();
  const sent: Promise<unknown>[] = [];
  if (ack) for (let i = 0; i < n; i++) sent.push(pub.publish('natural', DATA));
  else for (let i = 0; i < n; i++) sent.push(pub.publish('natural', DATA, { ack: false }));
  await Promise.all(sent);
  const rate = n / ((performance.now() - t0) / 1000);
  const got = await c.settled();
  await pub.close();
  await sub.close();
  await reading.catch(() => undefined); // closing the client ends the subscription either way
  return { rate, got, sent: n };
}

/** One round of the nats.js loop, its subscriber on a connection of its own. */
function natsBurst(
  system: string,
  publisher: () => Promise<NatsConnection>,
  subscriber: () => Promise<NatsConnection>,
): Side {
  return {
    system,
    run: async (n) => {
      const nc = await publisher();
      const subNc = await subscriber();
      const c = arrivals(n);
      const sub = subNc.subscribe(SUBJECT);
      const reading = (async () => {
        for await (const _m of sub) c.hit();
      })();
      await subNc.flush();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) nc.publish(SUBJECT, DATA);
      await nc.flush();
      const rate = n / ((performance.now() - t0) / 1000);
      const got = await c.settled();
      sub.unsubscribe();
      await reading;
      await subNc.close();
      return { rate, got, sent: n };
    },
  };
}

/** The judged nats.js loop over TLS, and the plaintext one shown beside it. */
function natsPeers(ctx: Ctx): Pick<Row, 'peer' | 'plainPeer'> {
  return {
    peer: natsBurst('NATS core TLS, nc.publish loop', ctx.natsTls, async () =>
      (await ctx.tlsPeers()).nats(),
    ),
    plainPeer: natsBurst('NATS core plaintext, nc.publish loop', ctx.nats, () =>
      natsConnect({ servers: NATS_URL }),
    ),
  };
}

export async function fireAndForgetRow(ctx: Ctx, n: number): Promise<Row> {
  const broker = await ctx.memoryBroker();
  return {
    id: 'fire',
    title: `fire-and-forget loop of ${n.toLocaleString('en-US')} → subscriber`,
    n,
    goal: 1.0,
    felix: [
      {
        system: 'Felix TLS, publish(s, data, { ack: false }) loop',
        run: (m) => felixBurst(ctx, broker, m, false),
      },
    ],
    ...natsPeers(ctx),
    close: async () => undefined,
  };
}

export async function ackedBurstRow(ctx: Ctx, n: number): Promise<Row> {
  const broker = await ctx.memoryBroker();
  return {
    id: 'burst',
    title: `acked publish burst of ${n.toLocaleString('en-US')} → subscriber`,
    n,
    goal: 0.8,
    felix: [
      {
        system: 'Felix TLS, publish(s, data) loop, awaited at the end',
        run: (m) => felixBurst(ctx, broker, m, true),
      },
    ],
    ...natsPeers(ctx),
    close: async () => undefined,
  };
}
