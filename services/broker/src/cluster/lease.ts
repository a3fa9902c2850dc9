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
import { Refusal } from '../session/refusal.js';

export type MonoClock = () => number;

/** Why a lease is not held: no call accepted yet since the broker started, the control plane
 *  counted the node down (and the assignment feed has not caught up), or it ran out. */
export type LeaseGap = 'starting' | 'deposed' | 'lapsed';

/** What a write's check reads of a lease (a Lease; a test's stand-in may say only `held`). */
export interface LeaseView {
  readonly held: boolean;
  readonly gap?: LeaseGap | null;
}

export class Lease {
  /** Monotonic ms until which writes are allowed (none before the first accepted call). */
  private untilMono = Number.NEGATIVE_INFINITY;
  /** When the control plane last counted this node down; null once the assignments caught up. */
  private deposedAtMono: number | null = null;
  /** Told when the node is deposed (the assignment feed is asked again at once). */
  onDeposed: () => void = () => undefined;
  /** A registration or heartbeat was ever accepted. */
  private renewed = false;

  constructor(private readonly now: MonoClock = () => performance.now()) {}

  /** A registration or heartbeat sent at `sentAtMono` was accepted with lease length `lMs`. */
  renew(sentAtMono: number, lMs: number): void {
    this.renewed = true;
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

  /** Why the lease is not held now; null while it is. */
  get gap(): LeaseGap | null {
    if (this.held) return null;
    if (this.deposedAtMono !== null) return 'deposed';
    return this.renewed ? 'lapsed' : 'starting';
  }

  /** Monotonic ms left (0 when lapsed). */
  get remainingMs(): number {
    return Math.max(0, this.untilMono - this.now());
  }
}

/**
 * The refusal (shard_unavailable, retryable) of a write to a shard `nodeId` leads while its lease
 * is not held, saying why, so a broker that has just started is not read as one cut off from the
 * control plane; null while the lease is held.
 */
export function leaseRefusal(lease: LeaseView, where: string, nodeId: string): Refusal | null {
  if (lease.held) return null;
  const gap = lease.gap ?? 'lapsed';
  const why =
    gap === 'starting'
      ? `node ${nodeId} has started and is registering with the control plane (no heartbeat accepted yet), so it does not write yet (lease_starting)`
      : gap === 'deposed'
        ? `the control plane counted node ${nodeId} down; it writes again once the assignments it was sent since are applied (lease_deposed)`
        : `node ${nodeId} has had no heartbeat accepted by the control plane for 0.75 of its lease, so it stops writing until the next one is (lease_lapsed)`;
  return new Refusal('shard_unavailable', `${where}: ${why}`, `lease_${gap}`);
}
