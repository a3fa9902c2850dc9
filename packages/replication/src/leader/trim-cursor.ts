/**
 * The leader's view of what one follower of a riding log (a cache, counter, group-cursor or
 * dead-letter log) was told of the leader's base, so that follower can delete what the leader's
 * compaction deleted. A pure state machine beside the FollowerCursor; sending is the shipper's.
 *
 * A compaction restates the live entries below its cut at the tail, then deletes whole segments
 * below the cut: the base rises. A follower may drop the same prefix only once it holds every
 * restated entry, or its copy would replay to older values. So when the base is seen above what
 * the follower was told, the leader's log end at that moment (past every restated entry: they
 * were written before the segments went) is noted, and the trim falls due once the follower
 * confirmed that end. A follower that does not know the message (UnsupportedKind) is never
 * asked again; any other refusal, or no answer, is retried after a doubling backoff.
 */
import { INTERNAL_ERROR } from '@felix/wire';
import { REPLICATE_RETRY_MS_MAX, REPLICATE_RETRY_MS_MIN } from '../limits.js';
import type { FollowerAnswer } from './follower-cursor.js';

export class TrimCursor {
  /** The highest leader base this follower acknowledged. */
  told = 0;
  /** Set once the follower answered that it does not know trims. */
  refused = false;
  /** A base above `told`, and the leader's log end when it was seen. */
  private seen: { base: number; end: number } | undefined;
  private retryAt = 0;
  private retryMs = REPLICATE_RETRY_MS_MIN;

  /** Takes the leader log's base and end (written offset) as they are now. */
  observe(base: number, end: number): void {
    if (base <= this.told || base <= (this.seen?.base ?? 0)) return;
    // A newer base replaces an untold one: its end is later, so waiting for it covers both.
    this.seen = { base, end };
  }

  /** The base to tell now, given what the follower confirmed durable; undefined: nothing. */
  due(confirmed: number, nowMs: number): number | undefined {
    const seen = this.seen;
    if (this.refused || seen === undefined || nowMs < this.retryAt) return undefined;
    return confirmed >= seen.end ? seen.base : undefined;
  }

  /** The answer to a trim naming `base` (null: none came). */
  onAnswer(base: number, answer: FollowerAnswer | null, nowMs: number): void {
    if (answer?.kind === 'ok') {
      this.told = Math.max(this.told, base);
      if (this.seen !== undefined && this.seen.base <= this.told) this.seen = undefined;
      this.retryMs = REPLICATE_RETRY_MS_MIN;
      return;
    }
    if (answer?.code === INTERNAL_ERROR.UnsupportedKind) {
      this.refused = true;
      return;
    }
    this.retryAt = nowMs + this.retryMs;
    this.retryMs = Math.min(REPLICATE_RETRY_MS_MAX, this.retryMs * 2);
  }
}
