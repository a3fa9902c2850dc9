// Goal: a quorum stream PATCHed to `leader` serves uncommitted reads; a broker that installed the
// stream before the PATCH and is later promoted must not mark its history `committedReads`
// (a resume would then never part, though its readers saw records the new leader lacks).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { durableTableOfN1 } from './support/shard-table.js';

const T = 't1';
const NS = 'ns';
const stream = (consistency: string) => ({
  tenant_id: T,
  namespace: NS,
  stream: 's',
  shards: 1,
  durable: true,
  consistency,
  replication_factor: 2,
});
const assignment = (leader: string, generation: number) => ({
  tenant_id: T,
  namespace: NS,
  kind: 'stream',
  stream: 's',
  shard: 0,
  leader,
  replicas: ['n1', 'n2'],
  generation,
});
const change = (value: Record<string, unknown>) => ({ op: 'put', key: {}, value }) as never;

describe('committedReads follows the catalog', () => {
  it('a_leader_promoted_after_a_patch_to_leader_consistency_checks_resumes_against_its_labels', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-committed-reads-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const cfg = loadConfig({ FELIX_DURABLE_STORAGE_DIR: dir });
    const { t, installed } = durableTableOfN1(cfg);
    t.streamsFeed.snapshot([stream('Quorum')]);
    t.assignmentsFeed.snapshot([assignment('n2', 1)]); // n1 follows: the runtime is installed
    await t.settled();
    t.streamsFeed.changes([change(stream('Leader'))]); // PATCH consistency to leader
    await t.settled();
    t.assignmentsFeed.changes([change(assignment('n1', 2))]); // n1 promoted
    await t.settled();
    const shard = installed[0]!.shards[0] as { history?: { committedReads?: boolean } };
    expect(shard.history).toBeDefined();
    // The stream is `leader` now: its readers may have seen uncommitted records.
    expect(shard.history!.committedReads).toBe(false);
    await t.close();
  });
});
