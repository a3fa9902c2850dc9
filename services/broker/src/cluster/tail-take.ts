/**
 * A promoted leader's take of the furthest tail before it serves (docs/replication.md, "The
 * fence and divergent suffixes"): once a majority of the set accepted its generation, the fence
 * answer furthest ahead (by its last record's generation, then length) may hold records this
 * broker lacks, acknowledged by a quorum after the report placement chose it by. They are pulled
 * (`ReplicateFetch`) into this broker's log while the shard is closed, compared where they
 * overlap what it holds; its own differing suffix (never at or below its commit offset) is
 * dropped first. The shard's store then opens again over the longer log.
 */
import {
  type FenceAnswer,
  type FencedLogKind,
  type LogEnd,
  type PeerLink,
  TAIL_FETCH_DEADLINE_MS,
  TailFetchError,
  fetchTail,
  furthestAnswer,
} from '@felix/replication';
import {
  FLAG_GENERATION_START,
  FollowerAppender,
  GenerationStarts,
  type LogOptions,
  ReplicaFile,
  SegmentLog,
  decodeGenerationStartBody,
  nodeIo,
  truncateLogAbove,
} from '@felix/storage';
import type { ShardRef } from '@felix/wire';

/** Where a log ends, by its tail and its generations file. */
export async function logEndOf(log: { dir: string; tailOffset: number }): Promise<LogEnd> {
  const starts = await GenerationStarts.open(nodeIo, log.dir);
  const end = log.tailOffset;
  return { logEnd: end, lastGeneration: end > 0 ? starts.at(end - 1).generation : 0 };
}

/** The answer to take the tail from, when one is further ahead than `own`. */
export function tailSource(own: LogEnd, answers: readonly FenceAnswer[]): FenceAnswer | undefined {
  return furthestAnswer(own, answers);
}

export interface TailTaken {
  /** Records pulled from the source, and where this broker's own suffix was cut (if it was). */
  pulled: number;
  truncatedAt: number | null;
  source: string;
}

/**
 * Where a cache or counter log is compared from: its followers keep no commit offset (the mark
 * is not shipped with them), so the generations say. When this log's last record and the
 * source's were written under one generation, both hold a prefix of that generation's leader's
 * log, this one the shorter: one record of overlap suffices. Otherwise (a generation this
 * broker never heard from, or records written before generations were labelled) the whole log
 * is compared.
 */
function ridingFrom(
  log: { baseOffset: number; tailOffset: number },
  starts: GenerationStarts,
  source: FenceAnswer,
): number {
  const end = log.tailOffset;
  const last = end > log.baseOffset ? starts.at(end - 1).generation : 0;
  if (last !== 0 && last === source.lastGeneration) return Math.max(log.baseOffset, end - 1);
  return log.baseOffset;
}

/**
 * Dates the generations of records just appended at `first`: a `quorum` stream's by the
 * generation-start records among them, as its followers date them (replica-server.ts,
 * `labelStarts`). The records before a start go on with the history already held: a newer
 * generation without a start record is its leader going on leading (a follower-set change).
 */
async function dateStarts(
  starts: GenerationStarts,
  first: number,
  payloads: readonly Uint8Array[],
  flags: readonly number[] | undefined,
): Promise<void> {
  if (flags === undefined) return;
  for (const [i, f] of flags.entries()) {
    if ((f & FLAG_GENERATION_START) === 0) continue;
    const generation = decodeGenerationStartBody(payloads[i]!);
    if (generation !== undefined) await starts.begin(generation, first + i);
  }
}

/**
 * Pulls the source's records this broker's log (closed by the caller, `opts`) lacks, at
 * `ref`'s generation. `quorum`: a `quorum` stream's log, whose generations are dated by their
 * start records. Rejects with TailFetchError (the open is retried) or a storage error.
 */
export async function takeTail(
  ref: ShardRef,
  opts: LogOptions,
  source: FenceAnswer,
  link: PeerLink,
  kind: FencedLogKind = 'stream',
  quorum = false,
): Promise<TailTaken> {
  const io = opts.io ?? nodeIo;
  let log = await SegmentLog.open(opts);
  try {
    const starts = await GenerationStarts.open(io, log.dir);
    const commit = (await ReplicaFile.open(io, log.dir)).state.commitOffset;
    const ownEnd = log.tailOffset;
    const from =
      kind === 'stream'
        ? // Below its commit offset this log holds what a majority holds: compare from there,
          // one record early, so a log that disagrees even there is found (and refused).
          Math.max(log.baseOffset, Math.min(commit, ownEnd) - 1)
        : ridingFrom(log, starts, source);
    // A generation begun at the tail and holding no record yet (an open that stopped before
    // its generation-start record) dates nothing: kept, it would outrank the pulled records'.
    await starts.truncated(ownEnd);
    // The pulled records were written by the source's generations, not by this leader's. A
    // quorum stream with a history dates them by their start records: dated as the source's
    // last generation from this log's end, records of an older generation (a same-leader bump
    // above it) lost that generation, and a subscriber resuming with its history was told the
    // log parted there and got its records again.
    const byStarts = kind === 'stream' && quorum && starts.all.length > 0;
    const dateFrom = async (at: number) => {
      if (!byStarts || starts.all.length === 0) await starts.begin(source.lastGeneration, at);
    };
    await dateFrom(ownEnd);
    let appender = new FollowerAppender(log);
    let truncatedAt: number | null = null;
    const next = await fetchTail({
      shard: ref,
      source: link,
      log: kind,
      from,
      to: source.logEnd,
      deadlineMs: TAIL_FETCH_DEADLINE_MS,
      apply: async (first, payloads, flags) => {
        const marked = flags === undefined ? {} : { flags };
        let r = await appender.appendAt(first, payloads, marked);
        if (r.kind === 'conflict') {
          if (r.at < commit)
            throw new TailFetchError(`record ${r.at}, below the commit offset ${commit}, differs`);
          await log.close();
          await truncateLogAbove(opts, r.at, { commitOffset: commit });
          log = await SegmentLog.open(opts);
          appender = new FollowerAppender(log);
          await starts.truncated(r.at);
          await dateFrom(r.at);
          truncatedAt = r.at;
          r = await appender.appendAt(first, payloads, marked);
        }
        if (r.kind !== 'appended') throw new TailFetchError(`appending at ${first}: ${r.kind}`);
        if (byStarts) await dateStarts(starts, first, payloads, flags);
      },
    });
    return {
      pulled: next - Math.min(ownEnd, truncatedAt ?? ownEnd),
      truncatedAt,
      source: source.nodeId,
    };
  } finally {
    await log.close();
  }
}
