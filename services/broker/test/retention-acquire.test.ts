// Goal: a stream's retention PATCHed while this broker only follows it applies when the broker
// later leads the shard (a hand-off or failover to it). Found by review: `acquire` opened the
// store through `rt.config`, the config the stream was installed with, which no PATCH updates
// (sameShape keeps the runtime); it now opens through the catalog's latest.
// Method: a ShardTable fed by hand with a real durable store (as committed-reads-patch.test.ts):
// installed with a 8 KiB bound while n1 follows, the bound removed, n1 promoted; the opened
// log must not delete anything by the removed bound.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { retentionOf } from '../src/streams/durable-store.js';
import { assignmentOfS, durableTableOfN1, putChange, streamS } from './support/shard-table.js';

describe('a retention PATCHed before this broker leads the shard', () => {
  it('a_leader_promoted_after_its_streams_retention_was_removed_opens_without_the_old_bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-retention-acquire-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const cfg = loadConfig({ FELIX_DURABLE_STORAGE_DIR: dir, FELIX_DURABLE_SEGMENT_BYTES: '4096' });
    const { t, installed, opened } = durableTableOfN1(cfg);
    t.streamsFeed.snapshot([streamS({ retention: { max_size_bytes: 8192 } })]);
    t.assignmentsFeed.snapshot([assignmentOfS('n2', 1)]); // n1 follows: the runtime is installed
    await t.settled();
    t.streamsFeed.changes([putChange(streamS())]); // PATCH: retention removed
    await t.settled();
    t.assignmentsFeed.changes([putChange(assignmentOfS('n1', 2))]); // n1 promoted (no feed change after)
    await t.settled();
    expect(opened).toHaveLength(1);
    const log = (
      installed[0]!.shards[0] as { store?: { log?: import('@felix/storage').SegmentLog } }
    ).store!.log!;
    const payload = new TextEncoder().encode('x'.repeat(1000));
    for (let i = 0; i < 40; i++) await log.append([payload]);
    expect(log.segmentCount).toBeGreaterThan(3);
    // Nothing bounds the stream any more: a retention pass deletes nothing.
    expect(await log.enforceRetention()).toBe(0);
    // The store is opened with the catalog's retention now: none.
    expect(retentionOf(cfg, opened[0]!)).toBeUndefined();
    await t.close();
    // The table's close may have closed it already: the verdict is above.
    await log.close().catch(() => undefined);
  });
});
