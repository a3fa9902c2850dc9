// Goal: a subscriber reading a durable stream's history is told of every record retention removes
// before it got there, as README "Subscribe" promises ("Loss is reported, not hidden": a `gap`
// status and `ev.lostBefore`, "which is where the client reports every record you will not get").
// Method: one real broker whose ring is tiny (history comes from the log), a subscriber from
// `earliest` that pulls one event and stops while more is published than retention keeps; then it
// reads on and accounts for every record published.
import type { StatusEvent } from '@felix/client';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { client } from './support.js';

// 64 KiB segments, retention at 24 MiB: 20,000 records of 1 KiB fit, 45,000 do not.
const YAML = `
durable: { segment_bytes: 65536, retention_check_interval_ms: 20 }
streams:
  - { tenant: t1, name: trimmed-history, durable: true, fsync: none, retention: { max_bytes: 25165824 } }
`;
const HISTORY = 20_000;
const TOTAL = 45_000;
const record = (i: number) => new TextEncoder().encode(`${i}-${'x'.repeat(1_000)}`);

describe('a history read under retention', () => {
  let broker: BrokerProcess;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    // A ring of 16 records: a subscribe from `earliest` reads its history from the log, in pages.
    broker = await startBroker({
      yaml: YAML,
      dir: dir.path,
      durable: true,
      env: { FELIX_MEMORY_RING_RECORDS: '16' },
    });
  });
  afterAll(async () => {
    await broker?.stop();
    await cleanup?.();
  });

  it('records_retention_removes_while_a_subscriber_reads_history_are_reported_as_lost', async () => {
    const reader = await client(broker);
    const writer = await client(broker);
    const statuses: StatusEvent[] = [];
    void (async () => {
      for await (const s of reader.status()) statuses.push(s);
    })();
    const pub = writer.publisher('trimmed-history');
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i++) if (!pub.send(record(i))) await pub.ready();
      await pub.flush();
    };
    try {
      await send(0, HISTORY);
      const it = reader
        .subscribe('trimmed-history', { shard: 0, from: 'earliest' })
        [Symbol.asyncIterator]();
      const first = await it.next();
      expect(first.value?.offset).toBe(0);
      // The subscriber stops pulling; the broker's history writer waits on the stream's flow
      // control while more than retention keeps is published and the head is deleted.
      await send(HISTORY, TOTAL);
      await waitFor(
        async () => ((await writer.offsetForTime('trimmed-history', 0)) ?? 0) > HISTORY / 2,
        'retention to delete the head of the history',
      );
      let delivered = 1;
      let lostBefore = 0;
      let last = 0;
      while (last < TOTAL - 1) {
        const r = await withDeadline(it.next(), 10_000, 'the next event');
        if (r.done) break;
        delivered++;
        lostBefore += r.value.lostBefore;
        last = r.value.offset;
      }
      await it.return?.();
      expect(last).toBe(TOTAL - 1);
      // Every record published was either delivered or counted as lost before the next one.
      expect(delivered + lostBefore).toBe(TOTAL);
      expect(statuses.some((s) => s.type === 'gap')).toBe(true);
    } finally {
      // A close failing after the test's own verdict changes nothing it checked.
      await pub.close().catch(() => undefined);
      await writer.close();
      await reader.close();
    }
  }, 120_000);
});
