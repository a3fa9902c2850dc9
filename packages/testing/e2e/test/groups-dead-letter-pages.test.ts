// Goal: a group with more dead letters than one list answers (1,000) can see and redrive every
// one of them: pages asked with `after` go past the first thousand, each offset comes exactly
// once and in order, the last page says no more remain, and a dead letter beyond the first
// thousand can be redriven. Before dead-letter pages the broker answered the same lowest 1,000
// to every list, so a walk by `after` never got past them. Method: one durable felix-broker
// process over TLS with an attempt bound of 1, so a nacked record is dead-lettered by the next
// poll; 2,500 records published in batches, polled and nacked until all are dead letters,
// then listed through @felix/client.
import type { FelixClient } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { PROJECTIONS_YAML, client } from './support.js';

const TOTAL = 2_500;
const PAGE = 1_000; // the broker's bound on one list, and a page's default

describe('dead-letter pages from a broker', () => {
  let broker: BrokerProcess;
  let felix: FelixClient;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({
      yaml: PROJECTIONS_YAML,
      dir: dir.path,
      durable: true,
      env: { FELIX_GROUP_MAX_ATTEMPTS: '1' },
    });
    felix = await client(broker);
  });
  afterAll(async () => {
    await felix?.close();
    await broker?.stop();
    await cleanup?.();
  });

  it('dead_letters_are_listed_in_pages_past_the_first_thousand', { timeout: 120_000 }, async () => {
    const g = felix.group('jobs', 'pages', { shard: 0 });
    await g.seek('latest');
    const published: number[] = [];
    for (let i = 0; i < TOTAL; i += 500) {
      const batch = Array.from({ length: 500 }, (_, j) => `job-${i + j}`);
      const first = (await felix.publishBatch('jobs', batch)).offset!;
      published.push(...batch.map((_, j) => first + j));
    }
    // Each record's one delivery is nacked; the next poll gives it up (attempt bound 1).
    await waitFor(
      async () => {
        const msgs = await g.poll({ max: PAGE, waitMs: 100 });
        await Promise.all(msgs.map((m) => m.nack()));
        return (await g.describe()).deadLetters === TOTAL;
      },
      'every record dead-lettered',
      90_000,
    );

    // Walked by `after` with the array form, as a caller of the old API would: every offset
    // once, in order. Before pages each list answered the same first 1,000 again.
    const walked: number[] = [];
    let after: number | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await g.deadLetters(after === undefined ? {} : { after });
      if (page.length === 0) break;
      walked.push(...page);
      after = page.at(-1);
    }
    expect(walked.length).toBe(TOTAL);
    expect(walked).toEqual(published);

    // The same by pages, which say when nothing remains, and by the offset iterator.
    const pages = [];
    for await (const page of g.deadLetterPages()) pages.push(page);
    expect(pages.map((p) => [p.offsets.length, p.more])).toEqual([
      [PAGE, true],
      [PAGE, true],
      [TOTAL - 2 * PAGE, false],
    ]);
    const all: number[] = [];
    for await (const offset of g.allDeadLetters({ limit: 400 })) all.push(offset);
    expect(all).toEqual(published);

    // A dead letter past the first thousand is redriven and delivered again.
    const last = published.at(-1)!;
    await g.redrive(last);
    const [again] = await g.poll({ max: 1, waitMs: 5_000 });
    expect(again).toMatchObject({ offset: last, attempts: 1 });
    await again!.ack();
    expect(await g.deadLetterPage({ after: published.at(-3)! })).toEqual({
      offsets: [published.at(-2)],
      more: false,
    });
  });
});
