/**
 * A promoted leader's take of the furthest tail (docs/replication.md, "The fence and divergent
 * suffixes"; reference `ReplicateFetch` 31). Placement chose the new leader by the old leader's
 * last report, which can be a heartbeat old: records acknowledged by a quorum after it may be
 * held by another member of the fenced majority and not by the new leader. Every majority that
 * acknowledged a record overlaps the fenced one, so the furthest log among the fence answers, by
 * (generation of its last record, length), holds every acknowledged record. The new leader
 * pulls what it lacks from that replica in bounded reads before it serves, comparing where the
 * pulled records overlap its own (a mismatch is its own divergent suffix, which the caller
 * drops, never at or below its commit offset).
 */
import {
  InternalFrameDecoder,
  REPLICATE_MARK,
  type ShardRef,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import { FLAG_GENERATION_START } from '@felix/storage';
import { replicaBatchChecksum } from '../checksum.js';
import { TailFetchError } from '../errors.js';
import { FENCE_ANSWER_TIMEOUT_MS, TAIL_FETCH_BYTES_MAX } from '../limits.js';
import { type FencedLogKind, REPLICA_LOGS } from '../log-kind.js';
import type { FenceAnswer } from './fence.js';
import type { PeerLink } from './shard-shipper.js';

/** Where a log ends: its length and the generation that wrote its last record. */
export interface LogEnd {
  logEnd: number;
  lastGeneration: number;
}

/** Whether log `a` is further ahead than log `b` (Raft's "more up to date" order). */
export function furtherAhead(a: LogEnd, b: LogEnd): boolean {
  return (
    a.lastGeneration > b.lastGeneration ||
    (a.lastGeneration === b.lastGeneration && a.logEnd > b.logEnd)
  );
}

/** The fence answer whose log is furthest ahead of `own` and of every other, if any is. */
export function furthestAnswer(
  own: LogEnd,
  answers: readonly FenceAnswer[],
): FenceAnswer | undefined {
  let best: FenceAnswer | undefined;
  for (const a of answers) if (furtherAhead(a, best ?? own)) best = a;
  return best;
}

export interface TailFetchOptions {
  /** The shard at the new leader's generation (the source answers only at the one it accepted). */
  shard: ShardRef;
  /** The replica whose log is furthest ahead. */
  source: PeerLink;
  /** The first offset to pull, and the end of the source's log. */
  from: number;
  to: number;
  /** Wall-clock budget for the whole pull. */
  deadlineMs: number;
  /** The log pulled (the one fenced): a stream's records by default. */
  log?: FencedLogKind;
  /** Stores `payloads` as the records at `first`, `first + 1`, ... (overlap compared). */
  /** `flags`: each record's storage flags when the answer was a marked batch (a generation
   *  start among them), else absent. */
  apply(first: number, payloads: Uint8Array[], flags?: number[]): Promise<void>;
}

/** Pulls records [from, to) from the source in bounded reads, in order; resolves with the
 *  offset after the last record applied; rejects with TailFetchError. */
export async function fetchTail(opts: TailFetchOptions): Promise<number> {
  const until = Date.now() + opts.deadlineMs;
  let next = opts.from;
  let correlationId = 0;
  while (next < opts.to) {
    const left = until - Date.now();
    if (left <= 0) throw new TailFetchError(`no records past ${next} of ${opts.to} in time`);
    const frame = encodeInternalMessage({
      kind: 'ReplicateFetch',
      correlationId: ++correlationId,
      shard: opts.shard,
      log: REPLICA_LOGS[opts.log ?? 'stream'].wire,
      fromOffset: next,
      maxBytes: TAIL_FETCH_BYTES_MAX,
    });
    let answer: Uint8Array;
    try {
      answer = await opts.source.request(frame, Math.min(FENCE_ANSWER_TIMEOUT_MS, left));
    } catch (err) {
      throw new TailFetchError(`the source did not answer at ${next}`, { cause: err });
    }
    const { payloads, flags } = recordsOf(answer, next);
    await opts.apply(next, payloads, flags);
    next += payloads.length;
  }
  return next;
}

/** The records of a fetch answer starting at `next`; TailFetchError for anything else. */
function recordsOf(answer: Uint8Array, next: number): { payloads: Uint8Array[]; flags?: number[] } {
  let m: ReturnType<typeof decodeInternalMessage> | undefined;
  try {
    const frames = new InternalFrameDecoder().push(answer);
    m = frames.length === 1 ? decodeInternalMessage(frames[0]!) : undefined;
  } catch (err) {
    throw new TailFetchError('a malformed answer', { cause: err });
  }
  if (m?.kind === 'ReplicateError') throw new TailFetchError(`refused (${m.code}): ${m.detail}`);
  if (m?.kind !== 'ReplicateRecords' && m?.kind !== 'ReplicateMarkedRecords')
    throw new TailFetchError(`answered ${m?.kind ?? 'nothing'}`);
  if (m.firstOffset !== next)
    throw new TailFetchError(`records at ${m.firstOffset}, asked ${next}`);
  const marks = m.kind === 'ReplicateMarkedRecords' ? m.marks : undefined;
  if (replicaBatchChecksum(m.payloads, marks) !== m.checksum)
    throw new TailFetchError('batch checksum mismatch');
  if (m.payloads.length === 0) throw new TailFetchError(`the source holds nothing at ${next}`);
  if (marks === undefined) return { payloads: m.payloads };
  // A generation start among them (the decoder let only known marks through).
  const flags = [...marks].map((k) =>
    k === REPLICATE_MARK.GenerationStart ? FLAG_GENERATION_START : 0,
  );
  return { payloads: m.payloads, flags };
}
