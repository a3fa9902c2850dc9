// Goal: the paths a newcomer writes first lose nothing and hear of every loss. A subscriber that
// reads as fast as it can keeps up with single-record fire-and-forget publishes (the broker merges
// what queues behind a busy write instead of dropping it), over both transports; and a subscriber
// whose records were dropped while it stalled is told so once it reads again, even though nothing
// is published afterwards (the broker's loss notice, not a later record, carries the report).
// Method: a real broker process per suite; the client exactly as the README shows it
// (`publish(s, data, { ack: false })` in a plain loop, `for await` over `subscribe`); the broker's
// /metrics page to know when the subscription is registered and when records were dropped.
import { type FelixClient, type StatusEvent, connect } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, brokerMetric as metric, startBroker } from '../src/index.js';

const YAML = `
streams:
  - { tenant: t1, name: alone_tls }
  - { tenant: t1, name: alone_quic }
  - { tenant: t1, name: quiet }
`;
/** Records published one by one in the keep-up test (the figure), of RECORD_BYTES. */
const ALONE_RECORDS = 100_000;
const RECORD_BYTES = 1024;
/** The smallest byte budget the broker takes: the stalled subscriber overflows it quickly. */
const QUIET_BUDGET_BYTES = 64 * 1024;
const SUBSCRIPTIONS = /felix_broker_subscriptions (\d+)/;
const DROPPED = /felix_broker_fanout_dropped_records_total (\d+)/;

function client(broker: BrokerProcess, transport: 'tls' | 'quic'): Promise<FelixClient> {
  return connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
  });
}

/** Waits until the broker counts more subscriptions than `before` (the subscribe is joined). */
async function subscribed(broker: BrokerProcess, before: number): Promise<void> {
  await waitFor(async () => (await metric(broker, SUBSCRIPTIONS)) > before, 'the subscription');
}

/** A broker of YAML for the enclosing describe block, with `env` over the defaults. */
function brokerForSuite(env: NodeJS.ProcessEnv = {}): { readonly broker: BrokerProcess } {
  let broker: BrokerProcess | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path, env });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });
  return {
    get broker() {
      return broker!;
    },
  };
}

describe('a subscriber that keeps up, with the default budget', () => {
  const suite = brokerForSuite();

  for (const transport of ['tls', 'quic'] as const) {
    describe(`over ${transport}`, () => {
      it('a_subscriber_that_keeps_up_loses_nothing_when_each_record_is_published_alone', async () => {
        const broker = suite.broker;
        const stream = `alone_${transport}`; // a fresh stream: its first record is offset 0
        const pub = await client(broker, transport);
        const sub = await client(broker, transport);
        let gaps = 0;
        void (async () => {
          for await (const s of sub.status()) if (s.type === 'gap') gaps += s.count;
        })();
        const before = await metric(broker, SUBSCRIPTIONS);
        let got = 0;
        let lostBefore = 0;
        let inOrder = true;
        const reading = (async () => {
          for await (const ev of sub.subscribe(stream, { from: 'latest', shard: 0 })) {
            inOrder &&= ev.offset === got + lostBefore + ev.lostBefore;
            got++;
            lostBefore += ev.lostBefore;
            if (ev.offset === ALONE_RECORDS - 1) return;
          }
        })();
        await subscribed(broker, before);
        const data = new Uint8Array(RECORD_BYTES).fill(7);
        const sent: Promise<unknown>[] = [];
        for (let i = 0; i < ALONE_RECORDS; i++)
          sent.push(pub.publish(stream, data, { ack: false }));
        await Promise.all(sent);
        // Every record either arrives or is reported lost (a loss notice covers a lost tail).
        await waitFor(() => got + gaps >= ALONE_RECORDS, 'every record or its loss', 120_000);
        expect({ got, gaps, lostBefore, inOrder }).toEqual({
          got: ALONE_RECORDS,
          gaps: 0,
          lostBefore: 0,
          inOrder: true,
        });
        await reading;
        await pub.close();
        await sub.close();
      }, 180_000);
    });
  }
});

describe('a stalled subscriber, with a small budget', () => {
  const suite = brokerForSuite({ FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: String(QUIET_BUDGET_BYTES) });

  it('a_dropped_record_is_reported_even_if_the_stream_goes_quiet', async () => {
    const broker = suite.broker;
    const felix = await client(broker, 'tls');
    const gaps: StatusEvent[] = [];
    void (async () => {
      for await (const s of felix.status()) if (s.type === 'gap') gaps.push(s);
    })();
    const before = await metric(broker, SUBSCRIPTIONS);
    const droppedBefore = await metric(broker, DROPPED);
    const events = felix.subscribe('quiet', { from: 'latest', shard: 0 })[Symbol.asyncIterator]();
    const head = events.next(); // starts the subscription; the caller then stops reading
    await subscribed(broker, before);
    // 16 MiB against a 64 KiB budget: far more than the transport's buffers hold, so the
    // broker drops for this subscriber; the last records published are among those dropped.
    const pub = felix.publisher('quiet', { lingerMs: 0, maxBatchRecords: 64 });
    const record = new Uint8Array(RECORD_BYTES).fill(5);
    const total = 16 * 1024;
    const acks = await Promise.all(Array.from({ length: total }, () => pub.publish(record)));
    const next = acks[acks.length - 1]!.offset! + 1;
    await waitFor(
      async () => (await metric(broker, DROPPED)) > droppedBefore,
      'records dropped for the stalled subscriber',
    );
    // Publishing has stopped. Read again: every record still queued, then the report, which
    // must come although no record follows the loss.
    let lostBefore = 0;
    let read = 1;
    const first = await head;
    void (async () => {
      lostBefore += (first.value as { lostBefore: number }).lostBefore;
      for (;;) {
        const r = await events.next();
        if (r.done) return;
        read++;
        lostBefore += r.value.lostBefore;
      }
    })();
    await waitFor(
      () => gaps.reduce((n, g) => n + (g.type === 'gap' ? g.count : 0), 0) + read === total,
      'the loss to be reported with no later publish',
    );
    const lastGap = gaps[gaps.length - 1]!;
    expect(lastGap.type === 'gap' && lastGap.from + lastGap.count).toBe(next);
    expect(lostBefore).toBeLessThan(total - read); // the tail's loss has no later event to ride
    await felix.close(); // ends the subscription (its reader is waiting for a next event)
  });
});
