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
 * after its last heartbeat. New copies go only to live nodes with a fresh heartbeat.
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
  private readonly startedMono: number;

  constructor(
    private readonly store: ControlStore,
    private readonly liveness: LivenessConfig,
    private readonly clock: Clock,
  ) {
    this.startedMono = clock.monoMs();
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
      // we started is judged one window after the start); a changed stamp restarts the count.
      if (!prev) this.seen.set(c.node_id, { stamp: c.stamp, sinceMono: this.startedMono });
      else if (prev.stamp !== c.stamp)
        this.seen.set(c.node_id, { stamp: c.stamp, sinceMono: mono });
      const since = this.seen.get(c.node_id)!.sinceMono;
      const silentOnWall = wall - c.stamp > window;
      const silentOnMono = mono - since >= window;
      if (!silentOnWall || !silentOnMono) continue;
      if (await this.store.nodes.markDown(c.node_id, c.stamp)) down.push(c.node_id);
      this.seen.delete(c.node_id);
    }
    for (const id of this.seen.keys()) if (!present.has(id)) this.seen.delete(id);
    return down;
  }
}
