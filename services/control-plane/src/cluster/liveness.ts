/**
 * Membership timing: the placement view of each node (eligible, routable, heartbeat age,
 * reasons) and the sweep that marks silent nodes down. Silence must hold on the store's wall
 * clock and, for a full window, on this process's monotonic clock, so a wall-clock step or a
 * restart of the sweeper never expires a live broker.
 */
import type { PlacementNode } from '@felix/router';
import type { Clock } from '../clock.js';
import type { LivenessConfig } from '../config.js';
import type { ControlStore } from '../store/store.js';
import type { NodeLiveness, NodeRecord } from '../store/types.js';

export interface NodePlacementView {
  eligible: boolean;
  routable: boolean;
  heartbeat_age_ms: number;
  reasons: string[];
}

/** The window after which a silent node is marked down: L plus the regrant margin. */
export function downAfterMs(l: LivenessConfig): number {
  return l.expiryTimeoutMs + l.regrantMarginMs;
}

/** How a node reads to brokers and operators right now. */
export function placementView(
  node: NodeRecord,
  l: LivenessConfig,
  nowMs: number,
  load = 0,
): NodePlacementView {
  const age = Math.max(0, nowMs - node.status.last_heartbeat_at_ms);
  const life = node.status.lifecycle;
  const fresh = age <= l.expiryTimeoutMs;
  const reasons: string[] = [];
  if (life !== 'live') reasons.push(`lifecycle_${life}`);
  if (!fresh) reasons.push('heartbeat_stale');
  const cap = node.spec.capacity.max_shards;
  if (cap > 0 && load >= cap) reasons.push('at_capacity');
  return {
    eligible: life === 'live' && fresh && !(cap > 0 && load >= cap),
    routable: (life === 'live' || life === 'draining') && fresh,
    heartbeat_age_ms: age,
    reasons,
  };
}

/**
 * The nodes as placement sees them. A node keeps its copies while live or draining (only the
 * sweep, after L + margin, takes them away); a departed node keeps them until the same window
 * after its last heartbeat (a quorum set short of a majority drops one that leads nothing at once:
 * store/assignments.ts, leavingOf).
 * New copies go only to live nodes with a fresh heartbeat.
 */
export function placementNodes(
  nodes: readonly NodeLiveness[],
  l: LivenessConfig,
  nowMs: number,
): PlacementNode[] {
  return nodes.map((node) => {
    const life = node.lifecycle;
    const age = nowMs - node.last_heartbeat_at_ms;
    return {
      nodeId: node.node_id,
      zone: node.zone,
      eligible: life === 'live' && age <= l.expiryTimeoutMs,
      routable:
        life === 'live' || life === 'draining' || (life === 'left' && age <= downAfterMs(l)),
      maxShards: node.max_shards,
    };
  });
}

/** The sweep's memory of when (monotonic) it saw each node's current stamp appear. */
export class Sweeper {
  private readonly seen = new Map<string, { stamp: number; sinceMono: number }>();
  /** Heartbeats this instance accepted: the stamp written and the monotonic time just after. */
  private readonly heardAt = new Map<string, { stamp: number; mono: number }>();
  private readonly startedMono: number;

  constructor(
    private readonly store: ControlStore,
    private readonly liveness: LivenessConfig,
    private readonly clock: Clock,
  ) {
    this.startedMono = clock.monoMs();
  }

  /**
   * A heartbeat this instance accepted, stamped `stamp`, its write done: its silence counts from
   * now on the monotonic clock, not from the next sweep that sees the stamp (up to a sweep
   * interval later, which the node's shards waited on after its death).
   */
  heard(nodeId: string, stamp: number): void {
    this.heardAt.set(nodeId, { stamp, mono: this.clock.monoMs() });
  }

  /** One sweep: returns the ids it marked down. */
  async sweep(): Promise<string[]> {
    const window = downAfterMs(this.liveness);
    const stamps = await this.store.nodes.liveStamps();
    const mono = this.clock.monoMs();
    const wall = this.clock.nowMs();
    const present = new Set<string>();
    const down: string[] = [];
    for (const c of stamps) {
      present.add(c.node_id);
      const prev = this.seen.get(c.node_id);
      // A stamp seen for the first time counts from this process's start (a node silent before
      // we started is judged one window after the start); a changed stamp restarts the count,
      // from when this instance accepted it if it did (both are after the write).
      const heard = this.heardAt.get(c.node_id);
      const changedAt = heard?.stamp === c.stamp ? Math.min(heard.mono, mono) : mono;
      if (!prev) this.seen.set(c.node_id, { stamp: c.stamp, sinceMono: this.startedMono });
      else if (prev.stamp !== c.stamp)
        this.seen.set(c.node_id, { stamp: c.stamp, sinceMono: changedAt });
      const since = this.seen.get(c.node_id)!.sinceMono;
      const silentOnWall = wall - c.stamp > window;
      const silentOnMono = mono - since >= window;
      if (!silentOnWall || !silentOnMono) continue;
      if (await this.store.nodes.markDown(c.node_id, c.stamp)) down.push(c.node_id);
      this.seen.delete(c.node_id);
    }
    for (const id of this.seen.keys()) if (!present.has(id)) this.seen.delete(id);
    for (const id of this.heardAt.keys()) if (!present.has(id)) this.heardAt.delete(id);
    return down;
  }

  /**
   * Milliseconds until the earliest node the last sweep saw may be marked down (both clocks
   * past its window), undefined when it saw none: a sweep timed then marks it at its window's
   * end instead of at the next periodic sweep after it.
   */
  nextDueInMs(): number | undefined {
    let due: number | undefined;
    for (const [id, s] of this.seen) {
      const heard = this.heardAt.get(id);
      // A stamp heard since the last sweep is the one the next sweep will judge.
      const inMs =
        heard !== undefined && heard.stamp !== s.stamp
          ? this.dueInMs(heard.stamp, heard.mono)
          : this.dueInMs(s.stamp, s.sinceMono);
      if (due === undefined || inMs < due) due = inMs;
    }
    return due;
  }

  /** Milliseconds until the heartbeat `nodeId` just sent (heard) may be marked down. */
  heardDueInMs(nodeId: string): number | undefined {
    const heard = this.heardAt.get(nodeId);
    return heard === undefined ? undefined : this.dueInMs(heard.stamp, heard.mono);
  }

  private dueInMs(stamp: number, sinceMono: number): number {
    const window = downAfterMs(this.liveness);
    // The wall test is strict (`>`): one millisecond past the window.
    const wallInMs = stamp + window + 1 - this.clock.nowMs();
    return Math.max(sinceMono + window - this.clock.monoMs(), wallInMs, 0);
  }
}
