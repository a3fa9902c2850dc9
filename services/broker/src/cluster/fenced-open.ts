/**
 * A replicated shard's open before it is served at a new generation: fences the replica set (a
 * majority must accept the generation), takes the furthest tail among the answers when one is
 * ahead of this log (tail-take.ts; the store closes and opens again over the longer log), and
 * records where the generation's records start. Answers the store (and where the generation
 * starts and the answers' highest commit offset), or null (closed, the open retried later) when
 * the fence or the take failed.
 */
import type { FenceOutcome } from '@felix/replication';
import { GenerationStarts, type LogOptions, SegmentLog, nodeIo } from '@felix/storage';
import type { ShardRef } from '@felix/wire';
import type { Logger } from 'pino';
import { FENCE_DEADLINE_MS } from '../limits.js';
import type { ShardStore } from '../streams/shard.js';
import type { Replicator } from './replicator.js';
import { logEndOf, tailSource, takeTail } from './tail-take.js';

/** A new leader's fence: where its generation's records start, the highest commit offset a
 *  fenced replica saved, and every generation start its log holds (what a resuming subscriber's
 *  history is checked against, util/log-history.ts). */
export interface Fence {
  generation: number;
  start: number;
  commitStart: number;
  starts: readonly { generation: number; start: number }[];
  /** A `quorum` stream: its readers saw only committed records, so a resume never parts
   *  (util/log-history.ts, resumeParting). */
  committedReads: boolean;
}

export interface FencedStore {
  store: ShardStore;
  fence?: Fence;
}

export interface FencedOpenDeps {
  /** The shard at the generation it opens at. */
  ref: ShardRef;
  followers: string[];
  replicator: Pick<Replicator, 'fence' | 'link'>;
  /** Where the shard's stream log lives (the tail is taken into it while the store is closed). */
  logOptions: LogOptions;
  /** Opens the shard's store again (after a tail was taken). */
  reopen: () => Promise<ShardStore>;
  /** A `quorum` stream: its logs date generations by their start records (tail-take.ts). */
  quorum: boolean;
  log: Logger;
  /** The open is tried again later; `why` it waits, when the refusals meanwhile should say. */
  retryLater: (why?: string) => void;
}

/** Why an open waits on a fence that no majority answered (what the refusals meanwhile say). */
export function fenceShortOfMajority(
  outcome: FenceOutcome,
  followers: readonly string[],
  generation: number,
): string {
  const members = followers.length + 1;
  const accepted = 1 + outcome.answers.length;
  if (outcome.deposed) return `a member holds a generation newer than ${generation}`;
  return `waiting for a majority of its replica set: ${accepted} of ${members} accepted generation ${generation}, ${Math.floor(members / 2) + 1} needed`;
}

export async function fencedOpen(
  store: ShardStore,
  d: FencedOpenDeps,
): Promise<FencedStore | null> {
  const ref = d.ref;
  const generation = ref.generation;
  const shard = `${ref.tenantId}/${ref.namespace}/${ref.stream}/${ref.shard}`;
  const outcome = await d.replicator.fence(ref, d.followers, FENCE_DEADLINE_MS);
  const retry = async (open: ShardStore | null, err?: unknown, why?: string) => {
    d.log.warn({ err, shard, generation, ...outcome }, 'the shard was not opened; retried');
    await open?.close();
    d.retryLater(why);
    return null;
  };
  if (!outcome.majority)
    return retry(store, undefined, fenceShortOfMajority(outcome, d.followers, generation));
  let open: ShardStore | null = store;
  try {
    const source = tailSource(await logEndOf(store.log!), outcome.answers);
    if (source !== undefined) {
      open = null;
      await store.close();
      const link = d.replicator.link(source.nodeId);
      const taken = await takeTail(ref, d.logOptions, source, link, 'stream', d.quorum);
      d.log.info({ shard, generation, ...taken }, 'took the furthest tail of the replica set');
      open = await d.reopen();
    }
    const log = open.log!;
    const starts = await GenerationStarts.open(nodeIo, log.dir);
    await starts.begin(generation, log.tailOffset);
    const start = starts.all.find((e) => e.generation === generation)?.start ?? log.tailOffset;
    const commitStart = Math.max(0, ...outcome.answers.map((x) => x.commitOffset));
    // A fenced majority held every committed record, and the tail taken was the furthest: a
    // log ending below a mark one of them saved means records were lost below it (a power
    // loss of a majority under `periodic`, or a bug). Said, not hidden. The log's end, not the
    // generation's start: a leader reopening at the generation it led holds records past it.
    if (log.tailOffset < commitStart)
      d.log.error(
        { shard, generation, log_end: log.tailOffset, commit_offset: commitStart },
        'the new leader holds less than a replica says was committed',
      );
    const fence = { generation, start, commitStart, starts: starts.all, committedReads: d.quorum };
    return { store: open, fence };
  } catch (err) {
    return retry(open, err, `its open failed (${(err as Error).message}); retried`);
  }
}

export interface CacheFenceDeps {
  /** The cache shard at the generation it opens at. */
  ref: ShardRef;
  followers: string[];
  replicator: Pick<Replicator, 'fence' | 'link'>;
  /** Where the shard's cache or counter log lives (closed while its tail is taken). */
  logOptions: (kind: 'cache' | 'counters') => LogOptions;
  log: Logger;
  retryLater: (why?: string) => void;
}

/**
 * A `quorum` cache shard's open by a new leader, before it serves: each of its two logs (the
 * cache log, the counter log) is fenced on its own, and its furthest tail among a majority's
 * answers taken, as a stream's is. A write acked by a majority after the old leader's last
 * report is then served even when placement promoted the replica that lacked it. Both logs are
 * closed here (the follower copies released, the projections not opened yet); the projections
 * replay what was taken when they open. False: the open is retried later.
 */
export async function fenceCacheShard(d: CacheFenceDeps): Promise<boolean> {
  const ref = d.ref;
  const shard = `${ref.tenantId}/${ref.namespace}/${ref.stream}/${ref.shard}`;
  for (const kind of ['cache', 'counters'] as const) {
    const outcome = await d.replicator.fence(ref, d.followers, FENCE_DEADLINE_MS, kind);
    const fail = (err?: unknown, why?: string) => {
      const { generation } = ref;
      d.log.warn(
        { err, shard, log: kind, generation, ...outcome },
        'cache shard not opened; retried',
      );
      d.retryLater(why);
      return false;
    };
    if (!outcome.majority)
      return fail(undefined, fenceShortOfMajority(outcome, d.followers, ref.generation));
    try {
      const opts = d.logOptions(kind);
      const own = await SegmentLog.open(opts);
      const end = await logEndOf(own).finally(() => own.close());
      const source = tailSource(end, outcome.answers);
      if (source === undefined) continue;
      const taken = await takeTail(ref, opts, source, d.replicator.link(source.nodeId), kind);
      d.log.info(
        { shard, log: kind, generation: ref.generation, ...taken },
        'took the furthest tail',
      );
    } catch (err) {
      return fail(err);
    }
  }
  return true;
}
