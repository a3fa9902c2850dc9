/**
 * This broker's lease on the shards it leads (docs/replication.md, "Leases"). The control plane
 * marks a silent broker down, and gives its shards away, only after L + margin of silence (L its
 * expiry timeout, returned with every heartbeat); the broker stops writing well before that: it
 * keeps 0.75 L from the moment it SENT the last heartbeat the control plane accepted (the answer
 * may come late; the send is the earliest the control plane can have stamped it). Measured on
 * the monotonic clock (`performance.now()`), so a wall-clock step neither extends nor ends it.
 * Safety assumes the two clocks drift apart by less than the quarter of L kept back.
 */
import { LEASE_KEPT_FRACTION } from '../limits.js';

export type MonoClock = () => number;

export class Lease {
  /** Monotonic ms until which writes are allowed (none before the first accepted call). */
  private untilMono = Number.NEGATIVE_INFINITY;
  /** When the control plane last counted this node down; null once the assignments caught up. */
  private deposedAtMono: number | null = null;
  /** Told when the node is deposed (the assignment feed is asked again at once). */
  onDeposed: () => void = () => undefined;

  constructor(private readonly now: MonoClock = () => performance.now()) {}

  /** A registration or heartbeat sent at `sentAtMono` was accepted with lease length `lMs`. */
  renew(sentAtMono: number, lMs: number): void {
    this.untilMono = Math.max(this.untilMono, sentAtMono + LEASE_KEPT_FRACTION * lMs);
  }

  /** The control plane no longer counts this node live: stop at once. */
  lapse(): void {
    this.untilMono = Number.NEGATIVE_INFINITY;
  }

  /**
   * The control plane counted this node down (or forgot it), so it may have given its shards
   * away: stop at once, and hold nothing again, whatever a new registration grants, until the
   * assignment feed answers a call sent after now (`assignmentsSeen`). Until then the shard
   * table still names this node leader of shards another broker leads.
   */
  depose(): void {
    this.lapse();
    this.deposedAtMono = this.now();
    this.onDeposed();
  }

  /** The assignment feed applied the answer to a call sent at `sentAtMono`. */
  assignmentsSeen(sentAtMono: number): void {
    if (this.deposedAtMono !== null && sentAtMono > this.deposedAtMono) this.deposedAtMono = null;
  }

  /** True while this broker may write the shards it leads. */
  get held(): boolean {
    return this.deposedAtMono === null && this.now() < this.untilMono;
  }

  /** Monotonic ms left (0 when lapsed). */
  get remainingMs(): number {
    return Math.max(0, this.untilMono - this.now());
  }
}
