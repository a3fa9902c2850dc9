/**
 * A follower's append: records arrive at the leader's offsets, and a batch may start below
 * the follower's tail (a resend after a lost answer, or the overlap a new leader's first
 * batch carries). Records the log already holds are compared byte for byte, never written
 * twice; only what lies past the tail is appended. The answer says what the replication layer
 * reports: `appended` (with the new tail), `gap` (the batch starts past the tail) or
 * `conflict` (the first offset whose bytes differ: the follower's uncommitted suffix diverged,
 * see tail-truncation.ts). Nothing is written on a gap or a conflict.
 *
 * One follower appender per log and no other writer: the tail it checks against must be the
 * tail its own append moves. Calls do not overlap (the replication layer ships one batch per
 * shard at a time); an overlapping call is a programmer error.
 */
import { assert } from '@felix/common';
import { FOLLOWER_COMPARE_READ_RECORDS_MAX } from '../limits.js';
import { FLAG_GENERATION_START } from '../segment/format.js';
import type { SegmentLog } from './segment-log.js';

export type FollowerAppendResult =
  | { kind: 'appended'; tail: number }
  | { kind: 'gap'; expected: number }
  | { kind: 'conflict'; at: number };

export class FollowerAppender {
  private busy = false;

  constructor(private readonly log: SegmentLog) {}

  /**
   * Appends `payloads` as the records at `first`, `first + 1`, ...; resolves once the new
   * records are durable under the log's fsync mode (`until: 'written'`: once written; the
   * caller then waits for `waitDurable` itself, and may append the next batch meanwhile). `flags` marks each record (a
   * generation-start record: FLAG_GENERATION_START; absent: all plain); a held record matches
   * only with the same bytes and the same mark. Records below the log's base cannot be
   * compared and are taken as held (the leader's retention removed them first).
   */
  async appendAt(
    first: number,
    payloads: Uint8Array[],
    opts: {
      timestampMicros?: number;
      flags?: readonly number[];
      until?: 'written' | 'durable';
    } = {},
  ): Promise<FollowerAppendResult> {
    assert(!this.busy, 'follower appends must not overlap');
    assert(Number.isSafeInteger(first) && first >= 0, 'a batch starts at a non-negative offset');
    this.busy = true;
    try {
      // A poisoned log holds records nobody may count on: no comparison, no answer but its poison.
      const poison = this.log.poisonError;
      if (poison !== undefined) throw poison;
      const tail = this.log.tailOffset;
      if (first > tail) return { kind: 'gap', expected: tail };
      const overlap = Math.min(tail, first + payloads.length);
      const from = Math.max(first, this.log.baseOffset);
      if (from < overlap) {
        const flagOf = (o: number) => opts.flags?.[o - first] ?? 0;
        const at = await this.firstMismatch(from, overlap, (o) => payloads[o - first]!, flagOf);
        if (at !== undefined) return { kind: 'conflict', at };
      }
      const fresh = payloads.slice(overlap - first);
      if (fresh.length === 0) return { kind: 'appended', tail };
      const flags = opts.flags?.slice(overlap - first);
      const appendOpts = {
        ...(opts.timestampMicros === undefined ? {} : { timestampMicros: opts.timestampMicros }),
        ...(flags?.some((f) => f !== 0) ? { flags } : {}),
      };
      const written =
        opts.until === 'written'
          ? await this.log.appendWritten(fresh, appendOpts)
          : await this.log.append(fresh, appendOpts);
      // The tail was ours alone: a record landing anywhere else means another writer.
      assert(written.first === tail, `follower append landed at ${written.first}, not ${tail}`);
      return { kind: 'appended', tail: written.next };
    } finally {
      this.busy = false;
    }
  }

  /** The first offset in [from, to) whose stored bytes differ from `expected(offset)`. */
  private async firstMismatch(
    from: number,
    to: number,
    expected: (offset: number) => Uint8Array,
    expectedFlags: (offset: number) => number,
  ): Promise<number | undefined> {
    let at = from;
    while (at < to) {
      // Up to the written offset: a batch appended `until: 'written'` may still be syncing.
      const r = await this.log.readWritten(at, {
        maxRecords: Math.min(to - at, FOLLOWER_COMPARE_READ_RECORDS_MAX),
        includeGenerationStarts: true,
      });
      // Trimmed while comparing: what remains below the new base is taken as held.
      if (r.kind === 'trimmed') at = Math.max(at, r.oldest);
      else {
        // Every record below the tail was written, so it is readable, unless a failed sync
        // poisoned the log meanwhile (reads then stop at the durable bound).
        const poison = r.records.length === 0 ? this.log.poisonError : undefined;
        if (poison !== undefined) throw poison;
        assert(r.records.length > 0, `records ${at}..${to} are below the tail but unreadable`);
        for (const rec of r.records) {
          if (rec.offset >= to) return undefined;
          if (!sameBytes(rec.payload, expected(rec.offset))) return rec.offset;
          if ((rec.flags & FLAG_GENERATION_START) !== expectedFlags(rec.offset)) return rec.offset;
        }
        at = r.records[r.records.length - 1]!.offset + 1;
      }
    }
    return undefined;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
