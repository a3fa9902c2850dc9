// Goal: a quorum stream PATCHed to `leader` serves uncommitted reads; a broker that installed the
// stream before the PATCH and is later promoted must not mark its history `committedReads`
// (a resume would then never part, though its readers saw records the new leader lacks).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { assignmentOfS, durableTableOfN1, putChange, streamS } from './support/shard-table.js';

describe('committedReads follows the catalog', () => {
  it('a_leader_promoted_after_a_patch_to_leader_consistency_checks_resumes_against_its_labels', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-committed-reads-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const cfg = loadConfig({ FELIX_DURABLE_STORAGE_DIR: dir });
    const { t, installed } = durableTableOfN1(cfg);
    t.streamsFeed.snapshot([streamS({ consistency: 'Quorum' })]);
    t.assignmentsFeed.snapshot([assignmentOfS('n2', 1)]); // n1 follows: the runtime is installed
    await t.settled();
    t.streamsFeed.changes([putChange(streamS({ consistency: 'Leader' }))]); // PATCH consistency to leader
    await t.settled();
    t.assignmentsFeed.changes([putChange(assignmentOfS('n1', 2))]); // n1 promoted
    await t.settled();
    const shard = installed[0]!.shards[0] as { history?: { committedReads?: boolean } };
    expect(shard.history).toBeDefined();
    // The stream is `leader` now: its readers may have seen uncommitted records.
    expect(shard.history!.committedReads).toBe(false);
    await t.close();
  });
});
