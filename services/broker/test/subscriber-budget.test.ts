// Goal: a subscriber that stops reading costs the broker at most its byte budget, however many
// bytes are published and however large the batches: past the budget new records are dropped for
// it (and counted), not queued. Before the budget, the queue counted batches (1,024 of them), so a
// stalled subscriber of 256 KiB batches could hold 256 MiB.
// Method: a real broker process with a 4 MiB budget and a small ring; one connection subscribes
// and reads nothing after its first event while another publishes 48 MiB in 256 KiB batches; the
// broker's /metrics page gives the fullest subscriber queue's bytes (sampled throughout), the
// records dropped, and the process's resident memory.
import { type FelixClient, connect } from '@felix/client';
import { type BrokerProcess, brokerMetric as metric, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MIB = 1024 * 1024;
const BUDGET_BYTES = 4 * MIB;
const RECORD_BYTES = 1024;
const BATCH_RECORDS = 256;
const PUBLISHED_BYTES = 48 * MIB;
const QUEUED_MAX = /felix_broker_fanout_queued_bytes_max (\d+)/;
const DROPPED = /felix_broker_fanout_dropped_records_total (\d+)/;
const SUBSCRIPTIONS = /felix_broker_subscriptions (\d+)/;
const RSS = /felix_broker_process_process_resident_memory_bytes (\d+)/;

function client(broker: BrokerProcess): Promise<FelixClient> {
  return connect({
    servers: [broker.url('tls')],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
  });
}

describe('a stalled subscriber', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: firehose }\n',
      dir: dir.path,
      env: {
        FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: String(BUDGET_BYTES),
        FELIX_MEMORY_RING_BYTES: String(4 * MIB),
      },
    });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('a_stalled_subscriber_costs_at_most_its_byte_budget', async () => {
    const reader = await client(broker);
    const writer = await client(broker);
    const events = reader
      .subscribe('firehose', { from: 'latest', shard: 0 })
      [Symbol.asyncIterator]();
    const head = events.next(); // starts the subscription; nothing is read after its first event
    await waitFor(async () => (await metric(broker, SUBSCRIPTIONS)) > 0, 'the subscription');
    const rssBefore = await metric(broker, RSS);
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await metric(broker, QUEUED_MAX));
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    const pub = writer.publisher('firehose', { lingerMs: 0, maxBatchRecords: BATCH_RECORDS });
    const record = new Uint8Array(RECORD_BYTES).fill(9);
    const records = PUBLISHED_BYTES / RECORD_BYTES;
    for (let sent = 0; sent < records; sent += BATCH_RECORDS) {
      await Promise.all(Array.from({ length: BATCH_RECORDS }, () => pub.publish(record)));
    }
    await head;
    sampling = false;
    await sampler;
    peak = Math.max(peak, await metric(broker, QUEUED_MAX));
    const dropped = await metric(broker, DROPPED);
    const rssGrowth = (await metric(broker, RSS)) - rssBefore;
    console.log(
      `stalled subscriber: peak queued ${peak} B, dropped ${dropped} records, ` +
        `broker RSS +${(rssGrowth / MIB).toFixed(1)} MiB after ${PUBLISHED_BYTES / MIB} MiB`,
    );
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(BUDGET_BYTES);
    // What the budget, the ring and the transport's buffers did not hold was dropped.
    expect(dropped).toBeGreaterThan(records / 2);
    await reader.close();
    await writer.close();
  }, 120_000);
});
