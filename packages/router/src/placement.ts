/**
 * Rendezvous placement of shards over nodes: a pure function of its inputs (no clock, no I/O),
 * so every control-plane instance computes the same plan and tests can check it directly.
 */
import { assert } from '@felix/common';
import { InvalidReplicationFactorError, TooManyNodesError } from './errors.js';
import { fnv1a32, mixScore } from './hash.js';
import { NODES_MAX, REPLICATION_FACTOR_MAX } from './limits.js';

/** A shard belongs to a stream or to a cache; the kind is part of its identity. */
export type ShardKind = 'stream' | 'cache';

export interface ShardKey {
  kind: ShardKind;
  tenant: string;
  namespace: string;
  name: string;
  shard: number;
}

export interface PlacementNode {
  nodeId: string;
  /** Zone, or null: a node without a zone counts as a zone of its own. */
  zone: string | null;
  /** May receive new copies (live, heartbeat inside the window). */
  eligible: boolean;
  /** May keep the copies it holds (live or draining, heartbeat inside the window). */
  routable: boolean;
  /** Hard cap on copies (leader or follower) the node holds; 0 means no cap. */
  maxShards: number;
}

export interface Assignment {
  leader: string;
  /** The replica set, leader first. */
  replicas: string[];
  generation: number;
}

export type Placement =
  | { placed: true; assignment: Assignment; changed: boolean }
  | { placed: false; reason: 'no_eligible_node' | 'no_caught_up_replica' };

/**
 * Who may take over a shard whose log must not come back shorter (a durable stream): when its
 * leader is lost, only these replicas may lead, the first routable one in this order (most
 * caught up first); with none the shard stays unplaced rather than open elsewhere empty.
 */
export interface FailoverPolicy {
  candidates: readonly string[];
}

export interface ShardRequest {
  key: ShardKey;
  replicationFactor: number;
  current?: Assignment | undefined;
  /** Absent: nothing to protect, any replica (or a fresh node) may take over. */
  failover?: FailoverPolicy | undefined;
  /**
   * A leaving leader's hand-off: it stopped writing and these members hold its whole log. The
   * first eligible one leads at once (the old leader stays in the set); none: nothing moves.
   */
  handoff?: FailoverPolicy | undefined;
  /**
   * Members in the order their leader last reported them, most caught up first. Where no policy
   * picks the new leader (nothing to protect, or an operator accepted the loss), a live replica
   * is taken in this order before rank, so the copy kept is the fullest one there is.
   */
  prefer?: readonly string[] | undefined;
  /**
   * A quorum shard (docs/replication.md, "Quorum sets change one step at a time"): its acks
   * wait for a majority of its set, and a new leader's fence reaches a majority of its set, so
   * the two majorities overlap only if the set is the same. A change of leader therefore keeps
   * every member, reachable or not; members are dropped and the set topped up only under a
   * leader that has `established` its generation (reported at it, so it fenced and holds every
   * acknowledged write), never in the step that changes the leader. `lost` names members whose
   * data an operator gave up: they are dropped even under a leader not yet established (that
   * step drops them only), so a set whose majority died can be brought down to its survivors.
   * `leaving` names routable members to drop (a broker that deregistered leading nothing, whose
   * absence leaves the set short of a majority): like any member, only under an established
   * leader; until then such a member may still be chosen to lead a failover.
   */
  quorum?:
    | { established: boolean; lost?: readonly string[]; leaving?: readonly string[] }
    | undefined;
}

export interface PlanEntry {
  key: ShardKey;
  placement: Placement;
  current?: Assignment | undefined;
}

/** The string every score is computed from; names never contain NUL, so it is unambiguous. */
export function shardKeyString(key: ShardKey): string {
  return `${key.kind}\u0000${key.tenant}\u0000${key.namespace}\u0000${key.name}\u0000${key.shard}`;
}

/** The node's rendezvous score for the shard; the highest score wins. */
export function rendezvousScore(key: ShardKey, nodeId: string): number {
  return mixScore(fnv1a32(shardKeyString(key)), fnv1a32(nodeId));
}

/** Nodes ordered best first for this shard (ties, which need equal scores, go by node id). */
export function rankNodes<N extends { nodeId: string }>(key: ShardKey, nodes: readonly N[]): N[] {
  const keyHash = fnv1a32(shardKeyString(key));
  const scored = nodes.map((n) => ({ n, s: mixScore(keyHash, nodeHash(n.nodeId)) }));
  scored.sort((a, b) => b.s - a.s || (a.n.nodeId < b.n.nodeId ? -1 : 1));
  return scored.map((x) => x.n);
}

// Node-id hashes are reused across every shard of a pass; the cache is bounded by NODES_MAX
// times a small factor and cleared when it outgrows that (node ids churn slowly).
const nodeHashes = new Map<string, number>();
function nodeHash(nodeId: string): number {
  let h = nodeHashes.get(nodeId);
  if (h === undefined) {
    if (nodeHashes.size >= NODES_MAX * 4) nodeHashes.clear();
    h = fnv1a32(nodeId);
    nodeHashes.set(nodeId, h);
  }
  return h;
}

/** The member a leaving leader hands the shard to: the first eligible hand-off candidate. */
function handoffTarget(
  req: ShardRequest,
  byId: ReadonlyMap<string, PlacementNode>,
): string | undefined {
  const current = req.current;
  if (current === undefined || req.handoff === undefined) return undefined;
  return req.handoff.candidates.find(
    (id) =>
      id !== current.leader && current.replicas.includes(id) && byId.get(id)?.eligible === true,
  );
}

function zoneOf(node: PlacementNode): string {
  return node.zone ?? `node:${node.nodeId}`;
}

function checkInputs(replicationFactor: number, nodes: readonly PlacementNode[]): void {
  if (!Number.isInteger(replicationFactor) || replicationFactor < 1) {
    throw new InvalidReplicationFactorError(replicationFactor);
  }
  if (replicationFactor > REPLICATION_FACTOR_MAX) {
    throw new InvalidReplicationFactorError(replicationFactor);
  }
  if (nodes.length > NODES_MAX) throw new TooManyNodesError(nodes.length);
}

/**
 * Places one shard. `load` counts the copies each node holds outside this shard; it is read,
 * never written. Keeps what still works: a routable leader stays leader; a leader that is no
 * longer routable hands over to its best-ranked live replica; unroutable copies are dropped
 * and the set is topped up, spreading into zones it lacks first. Any change bumps the generation.
 */
export function placeShard(
  req: ShardRequest,
  nodes: readonly PlacementNode[],
  load: ReadonlyMap<string, number> = new Map(),
): Placement {
  checkInputs(req.replicationFactor, nodes);
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  return placeWith(req, nodes, byId, load);
}

/** A live (eligible) replica, the most caught up reported first, then by rank; a draining one
 *  still beats a fresh empty copy. */
function fullestReplica(
  kept: readonly string[],
  prefer: readonly string[],
  rank: ReadonlyMap<string, number>,
  byId: ReadonlyMap<string, PlacementNode>,
): string | undefined {
  const reported = new Map(prefer.map((id, i) => [id, i]));
  const unreported = reported.size;
  const order = [...kept].sort(
    (a, b) =>
      (reported.get(a) ?? unreported) - (reported.get(b) ?? unreported) ||
      (rank.get(a) ?? 0) - (rank.get(b) ?? 0),
  );
  return order.find((id) => byId.get(id)?.eligible === true) ?? order[0];
}

function placeWith(
  req: ShardRequest,
  nodes: readonly PlacementNode[],
  byId: ReadonlyMap<string, PlacementNode>,
  load: ReadonlyMap<string, number>,
): Placement {
  const current = req.current;
  const successor = handoffTarget(req, byId);
  const leaving = new Set(req.quorum?.leaving ?? []);
  const routable = (id: string) => byId.get(id)?.routable === true;
  // Fast path: a full set of routable copies led by a routable leader stays exactly as it is,
  // which is what the full path below would conclude too, without ranking every node.
  if (
    current &&
    successor === undefined &&
    current.replicas.length >= req.replicationFactor &&
    current.replicas[0] === current.leader &&
    current.replicas.every((id) => routable(id) && !leaving.has(id))
  ) {
    return { placed: true, changed: false, assignment: current };
  }
  const ranked = rankNodes(req.key, nodes);
  const rank = new Map(ranked.map((n, i) => [n.nodeId, i]));
  const hasRoom = (n: PlacementNode) =>
    n.maxShards === 0 || (load.get(n.nodeId) ?? 0) < n.maxShards;

  const kept = (current?.replicas ?? []).filter(routable);
  let leader: string | undefined;
  if (successor !== undefined && kept.includes(successor)) {
    leader = successor;
  } else if (current && kept.includes(current.leader)) {
    leader = current.leader;
  } else if (current && req.failover) {
    // The log must not come back shorter: only a caught-up replica may lead, none is no one.
    const able = req.failover.candidates.filter((id) => kept.includes(id));
    leader = able.find((id) => byId.get(id)?.eligible === true) ?? able[0];
    if (leader === undefined) return { placed: false, reason: 'no_caught_up_replica' };
  } else if (kept.length > 0) {
    leader = fullestReplica(kept, req.prefer ?? [], rank, byId);
  } else {
    leader = ranked.find((n) => n.eligible && hasRoom(n))?.nodeId;
  }
  if (leader === undefined) return { placed: false, reason: 'no_eligible_node' };
  const step = current && quorumStep(req, current, leader);
  if (step) return step;

  // Leaving members may still lead a failover (above); they leave only on this ordinary path.
  const set = [leader, ...kept.filter((id) => id !== leader && !leaving.has(id))];
  const zones = new Set(set.map((id) => zoneOf(byId.get(id)!)));
  const candidates = ranked.filter((n) => n.eligible && hasRoom(n) && !set.includes(n.nodeId));
  for (const n of candidates) {
    if (set.length >= req.replicationFactor) break;
    if (zones.has(zoneOf(n))) continue;
    set.push(n.nodeId);
    zones.add(zoneOf(n));
  }
  for (const n of candidates) {
    if (set.length >= req.replicationFactor) break;
    if (!set.includes(n.nodeId)) set.push(n.nodeId);
  }
  assert(set.length <= Math.max(req.replicationFactor, kept.length), 'replica set overgrown');
  return placedAs(current, leader, set);
}

/**
 * A quorum shard's one step (`ShardRequest.quorum`): a new leader over the same members, or
 * nothing while its leader has not established its generation (bar members given up). Undefined:
 * the ordinary path may drop and top up members.
 */
function quorumStep(req: ShardRequest, current: Assignment, leader: string): Placement | undefined {
  if (!req.quorum) return undefined;
  if (leader !== current.leader) {
    return placedAs(current, leader, [leader, ...current.replicas.filter((id) => id !== leader)]);
  }
  // A set of one acks nothing under quorum: nothing to keep, it may grow at once.
  if (req.quorum.established || current.replicas.length === 1) return undefined;
  const lost = new Set(req.quorum.lost ?? []);
  return placedAs(
    current,
    leader,
    current.replicas.filter((id) => id === leader || !lost.has(id)),
  );
}

/** The placement of `leader` over `set`, at the next generation when either changed. */
function placedAs(current: Assignment | undefined, leader: string, set: string[]): Placement {
  const changed =
    current === undefined ||
    current.leader !== leader ||
    current.replicas.length !== set.length ||
    current.replicas.some((id, i) => set[i] !== id);
  const generation =
    current === undefined ? 1 : changed ? current.generation + 1 : current.generation;
  return { placed: true, changed, assignment: { leader, replicas: set, generation } };
}

/**
 * Places many shards in a fixed order (by key string) so capacity is shared the same way on
 * every instance. Load starts from the current assignments' routable copies.
 */
export function planPlacement(
  shards: readonly ShardRequest[],
  nodes: readonly PlacementNode[],
): PlanEntry[] {
  if (shards.length > 0) checkInputs(1, nodes);
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  const routable = new Set(nodes.filter((n) => n.routable).map((n) => n.nodeId));
  const load = new Map<string, number>();
  const bump = (ids: readonly string[], by: number) => {
    for (const id of ids) if (routable.has(id)) load.set(id, (load.get(id) ?? 0) + by);
  };
  for (const s of shards) if (s.current) bump(s.current.replicas, 1);
  const ordered = [...shards].sort((a, b) => {
    const ka = shardKeyString(a.key);
    const kb = shardKeyString(b.key);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const out: PlanEntry[] = [];
  for (const s of ordered) {
    if (s.current) bump(s.current.replicas, -1);
    checkInputs(s.replicationFactor, []);
    const placement = placeWith(s, nodes, byId, load);
    if (placement.placed) bump(placement.assignment.replicas, 1);
    else if (s.current) bump(s.current.replicas, 1);
    out.push({ key: s.key, placement, current: s.current });
  }
  return out;
}
