/**
 * Goal: a replicated shard's fenced open (cluster/fenced-open.ts) says a loss below the commit
 * mark only when its log really ends below it. A leader reopening at the generation it already
 * led (a restart the control plane did not see) holds records past that generation's start;
 * its fence must not call them lost, while a log that truly ends below a fenced replica's mark
 * is still said, as an error.
 * Method: fencedOpen over a real segment log and generations file, with a replicator stub whose
 * fence answers a majority; the logger's lines are collected and read.
 */
import type { FenceAnswer, FenceOutcome } from '@felix/replication';
import { GenerationStarts, type LogOptions, SegmentLog, nodeIo } from '@felix/storage';
import { cleanupScope } from '@felix/testing-harness';
import type { ShardRef } from '@felix/wire';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { fencedOpen } from '../src/cluster/fenced-open.js';
import type { ShardStore } from '../src/streams/shard.js';

const SHARD = { tenant: 't1', namespace: 'default', stream: 'orders', shard: 0 };
const REF: ShardRef = {
  tenantId: 't1',
  namespace: 'default',
  stream: 'orders',
  shard: 0,
  generation: 7,
};
const scope = cleanupScope();
afterEach(() => scope.run());

/** A log of `before` records of generation 6, then `during` of generation 7 (when > 0). */
async function logOf(before: number, during: number): Promise<LogOptions> {
  const d = await scope.tempDir('felix-fenced-open-');
  const opts: LogOptions = { root: d.path, shard: SHARD, fsync: 'onCommit', preallocateBytes: 0 };
  const log = await SegmentLog.open(opts);
  const starts = await GenerationStarts.open(nodeIo, log.dir);
  await starts.begin(6, 0);
  await log.append(Array.from({ length: before }, (_, i) => new Uint8Array([i])));
  if (during > 0) {
    await starts.begin(7, log.tailOffset);
    await log.append(Array.from({ length: during }, (_, i) => new Uint8Array([i])));
  }
  await log.close();
  return opts;
}

async function openFenced(opts: LogOptions, answer: FenceAnswer) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  const log = await SegmentLog.open(opts);
  scope.defer(() => log.close());
  const store = { log, close: () => log.close() } as unknown as ShardStore;
  const outcome: FenceOutcome = {
    majority: true,
    deposed: false,
    answers: [answer],
    unanswered: [],
  };
  const opened = await fencedOpen(store, {
    ref: REF,
    followers: [answer.nodeId],
    replicator: {
      fence: async () => outcome,
      link: () => {
        throw new Error('no tail is taken here');
      },
    },
    logOptions: opts,
    reopen: async () => store,
    quorum: true,
    log: logger,
    retryLater: () => {
      throw new Error('the open was not expected to be retried');
    },
  });
  return { opened, errors: lines.filter((l) => l.level === 50) };
}

describe('a fenced open', () => {
  it('a_leader_reopening_at_the_generation_it_led_is_not_said_to_have_lost_committed_records', async () => {
    // Generation 7 began at 20 and its leader wrote 15 records; a follower saved the mark at 30.
    const opts = await logOf(20, 15);
    const follower = { nodeId: 'n2', logEnd: 35, commitOffset: 30, lastGeneration: 7 };
    const { opened, errors } = await openFenced(opts, follower);
    expect(opened?.fence?.start, 'where generation 7 began').toBe(20);
    expect(opened?.fence?.commitStart).toBe(30);
    expect(errors, 'no loss is said: the log ends at 35, past the mark').toEqual([]);
  });

  it('a_new_leader_whose_log_ends_below_a_fenced_commit_mark_says_so_as_an_error', async () => {
    // Nothing of generation 7 yet; the log ends at 20, the follower ends there too yet saved 30.
    const opts = await logOf(20, 0);
    const follower = { nodeId: 'n2', logEnd: 20, commitOffset: 30, lastGeneration: 6 };
    const { opened, errors } = await openFenced(opts, follower);
    expect(opened?.fence?.start).toBe(20);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ log_end: 20, commit_offset: 30 });
  });
});
