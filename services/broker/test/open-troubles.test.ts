// Goal: a quorum shard this broker was promoted to lead, whose fence no majority of its replica
// set accepted, is refused saying so, not "still opening". A new user's trial: with two of three
// brokers killed, the survivor answered every request `shard ... is still opening (not_ready)`
// and only its log said the set had lost its majority.
// Method: a ShardTable fed by hand (support/shard-table.ts) whose replicator's fence answers
// neither follower, then both; the refusal is read from the table before and after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { OpenTroubles } from '../src/cluster/open-troubles.js';
import { durableTableOfN1 } from './support/shard-table.js';

const stream = {
  tenant_id: 't1',
  namespace: 'ns',
  stream: 's',
  shards: 1,
  durable: true,
  consistency: 'Quorum',
  replication_factor: 3,
};
const assignment = {
  tenant_id: 't1',
  namespace: 'ns',
  kind: 'stream',
  stream: 's',
  shard: 0,
  leader: 'n1',
  replicas: ['n1', 'n2', 'n3'],
  generation: 4,
};

describe('a shard whose open waits', () => {
  it('a_promoted_quorum_leader_short_of_a_majority_is_refused_saying_so_not_still_opening', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'felix-open-troubles-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const cfg = loadConfig({ FELIX_DURABLE_STORAGE_DIR: dir });
    const { t } = durableTableOfN1(cfg);
    onTestFinished(() => t.close());
    const fences: string[][] = [];
    let majority = false;
    const replicator = t.replication!.replicator as unknown as Record<string, unknown>;
    replicator.fence = async (_ref: unknown, followers: string[]) => {
      fences.push(followers);
      const answer = { nodeId: 'n2', logEnd: 0, commitOffset: 0, lastGeneration: 0 };
      return majority
        ? {
            majority: true,
            deposed: false,
            answers: [answer, { ...answer, nodeId: 'n3' }],
            unanswered: [],
          }
        : { majority: false, deposed: false, answers: [], unanswered: [] };
    };
    t.streamsFeed.snapshot([stream as never]);
    t.assignmentsFeed.snapshot([assignment as never]);
    await t.settled();
    expect(fences[0]).toEqual(['n2', 'n3']);
    const refusal = t.refuse('stream', 't1', 'ns', 's', 0, true);
    expect(refusal?.wireCode).toBe('shard_unavailable');
    expect(refusal?.message).toBe(
      'stream t1/ns/s shard 0 is not served: waiting for a majority of its replica set: 1 of 3 accepted generation 4, 2 needed (not_ready)',
    );
    // The open is retried on its own: once a majority accepts, it is served.
    majority = true;
    await waitFor(() => t.refuse('stream', 't1', 'ns', 's', 0, true) === null, 'the open');
    expect(fences.length).toBeGreaterThan(1);
  });

  it('a_wait_note_is_forgotten_once_this_node_no_longer_leads_the_shard', () => {
    // Found by review: a cache shard's note stayed when its leadership moved away, and a later
    // lead would have quoted the old generation's count until its own fence settled.
    const troubles = new OpenTroubles();
    troubles.wait('k', 'waiting for a majority of its replica set: 1 of 3 accepted generation 2');
    expect(troubles.refusal('cache c shard 0', 'not_ready', 'k').message).toContain('1 of 3');
    expect(troubles.keptIf(true, 'k')).toBe(true);
    expect(troubles.refusal('cache c shard 0', 'not_ready', 'k').message).toContain('1 of 3');
    expect(troubles.keptIf(false, 'k')).toBe(false);
    expect(troubles.refusal('cache c shard 0', 'not_ready', 'k').message).toBe(
      'cache c shard 0 is still opening (not_ready)',
    );
  });
});
