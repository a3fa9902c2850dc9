/**
 * Slow subscribers: `subscribers` clients subscribe to an in-memory stream and stop reading
 * after their first event, while one publisher publishes batches as fast as the broker takes
 * them. The broker's per-subscriber queue then fills to its byte budget
 * (`broker.subscriber_queue_bytes`, pass it with --broker-env).
 */
import { type FelixClient, connect } from '@felix/client';
import type { BenchBroker } from '@felix/testing-bench-kit';
import { metricSum } from './broker-memory.js';
import type { TransportName } from './churn.js';

export interface SlowSubscriberOptions {
  transport: TransportName;
  stream: string;
  tenant: string;
  subscribers: number;
  until: number;
  recordBytes: number;
  batchRecords: number;
}

const POLL_MS = 50;
const SUBSCRIBED_DEADLINE_MS = 10_000;
const pause = () => new Promise((r) => setTimeout(r, POLL_MS));

async function client(broker: BenchBroker, o: SlowSubscriberOptions): Promise<FelixClient> {
  return connect({
    servers: [broker.url(o.transport)],
    tenant: o.tenant,
    tls: { fingerprint: broker.fingerprint },
  });
}

/** Waits until the broker counts `n` more subscriptions than `before`. */
async function subscribed(broker: BenchBroker, before: number, n: number): Promise<void> {
  const deadline = Date.now() + SUBSCRIBED_DEADLINE_MS;
  while (metricSum(await broker.metricsText(), 'felix_broker_subscriptions') < before + n) {
    if (Date.now() > deadline) throw new Error(`${n} subscriptions not live in time`);
    await pause();
  }
}

/** Runs the phase; answers the records published. */
export async function slowSubscribers(
  broker: BenchBroker,
  o: SlowSubscriberOptions,
): Promise<number> {
  const before = metricSum(await broker.metricsText(), 'felix_broker_subscriptions') || 0;
  const subs = await Promise.all(Array.from({ length: o.subscribers }, () => client(broker, o)));
  for (const s of subs) {
    // One next() and never another: the subscription starts and then nothing reads it.
    void s
      .subscribe(o.stream, { from: 'latest', shard: 0 })
      [Symbol.asyncIterator]()
      .next()
      .catch(() => undefined);
  }
  await subscribed(broker, before, o.subscribers);
  const pubClient = await client(broker, o);
  const pub = pubClient.publisher(o.stream, { maxBatchRecords: o.batchRecords });
  const data = new Uint8Array(o.recordBytes).fill(3);
  let sent = 0;
  while (Date.now() < o.until) {
    if (pub.send(data)) sent++;
    else await pub.ready();
    if (sent % 4096 === 0) await new Promise((r) => setImmediate(r)); // let the sampler run
  }
  await pub.flush().catch(() => undefined); // a flush cut short by the close needs no report
  await pubClient.close();
  await Promise.all(subs.map((s) => s.close()));
  return sent;
}

/**
 * Publishes `bytes` of records to `stream` and waits until the broker took them: the warm-up
 * fills the stream's in-memory ring with it, so what the ring keeps is part of the baseline
 * however few records the timed warm-up got through on a loaded machine.
 */
export async function fillStream(
  broker: BenchBroker,
  o: Pick<
    SlowSubscriberOptions,
    'transport' | 'stream' | 'tenant' | 'recordBytes' | 'batchRecords'
  >,
  bytes: number,
): Promise<void> {
  const c = await connect({
    servers: [broker.url(o.transport)],
    tenant: o.tenant,
    tls: { fingerprint: broker.fingerprint },
  });
  const pub = c.publisher(o.stream, { maxBatchRecords: o.batchRecords });
  const data = new Uint8Array(o.recordBytes).fill(4);
  for (let sent = 0; sent * o.recordBytes < bytes; ) {
    if (pub.send(data)) sent++;
    else await pub.ready();
  }
  await pub.flush();
  await c.close();
}
