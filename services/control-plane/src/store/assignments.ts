/**
 * Shard assignments: listing them, placement passes (plan from nodes, catalog and current
 * assignments, then write what changed with bumped generations), placing a new resource inside
 * its creating write, and removing the assignments of deleted resources. Every write records its
 * change on the assignments feed.
 */
import {
  type Assignment,
  type FailoverPolicy,
  type PlacementNode,
  type PlanEntry,
  type ShardKey,
  type ShardKind,
  type ShardRequest,
  placeShard,
  planPlacement,
  shardKeyString,
} from '@felix/router';
import {
  copiesHeldBy,
  deleteAssignmentIf,
  deleteAssignments,
  insertAssignmentsIfAbsent,
  updateAssignmentIf,
  upsertAssignments,
} from './assignment-rows.js';
import { NodeNotFoundError, NodeStateConflictError } from '../errors.js';
import { type CatalogKind, type ShardedResource, shardedResources } from './catalog-kinds.js';
import {
  type ReportTrust,
  TRUST_ALL,
  failoverPolicy,
  reportedOrder,
  handoffPolicy,
} from '../cluster/promotion.js';
import { type RebalanceNode, preferredLeaderOf, preferredMember } from '../cluster/rebalance.js';
import { LEADER_MOVES_PER_PASS_MAX } from '../limits.js';
import { livenessRows } from './membership.js';
import { reportsByShard } from './replica-reports.js';
import { page } from './paging.js';
import {
  type Row,
  assignmentKeyOf,
  assignmentOf,
  assignmentRowKey,
  num,
  shardId,
  str,
} from './rows.js';
import type { Sql } from './sql.js';
import type { Transactions, Write } from './transaction.js';
import type { AssignmentRecord, NodeLiveness, Page, ReplicaReport, Routing } from './types.js';

/** What accepting a lost node's data did: the shards it led that moved, and those it still leads. */
export interface AcceptedLoss {
  moved: AssignmentRecord[];
  still_led: number;
}

export interface PlacementOutcome {
  entries: PlanEntry[];
  written: AssignmentRecord[];
  unplaced: number;
  /** Of `written`, the shards whose leadership returned to their preferred broker. */
  returned: AssignmentRecord[];
  /** Leaderships placement asks their leaders to hand off to preferred brokers (answered to
   *  each leader's next replica report: routes/replica-reports.ts). */
  transfers: Transfer[];
}

/** How placement sees the nodes right now (liveness applied); supplied by the service. */
export type PlacementView = (nodes: readonly NodeLiveness[]) => PlacementNode[];

/** Leaderships returning to preferred brokers (cluster/rebalance.ts): the delay, 0 for never. */
export interface Rebalance {
  delayMs: number;
}

const NO_REBALANCE: Rebalance = { delayMs: 0 };

/** Everything one pass plans from, read in one transaction. */
interface PlacementInputs {
  nodes: PlacementNode[];
  requests: ShardRequest[];
  /** Each stream shard's routing, by `shardId` (placement carries it into the assignment). */
  routing: Map<string, Routing | undefined>;
  /** Each placed shard's floor, where it has one, by `shardId` (kept through every move). */
  floors: Map<string, Floor>;
  /** Assignments whose resource no longer exists. */
  orphans: AssignmentRecord[];
  transfers: Transfer[];
}

/** Where an accepted loss restarted a shard: its generation, and the copy kept (if any). */
interface Floor {
  generation: number;
  base?: string;
}

/** The record for shard `key` placed as `placed`; routing is kept only where it is not the
 *  default. */
function assignmentFor(
  key: { kind: ShardKind; tenant: string; namespace: string; name: string; shard: number },
  placed: Assignment,
  routing: Routing | undefined,
  floor?: Floor,
): AssignmentRecord {
  const a: AssignmentRecord = {
    tenant_id: key.tenant,
    namespace: key.namespace,
    kind: key.kind,
    stream: key.name,
    shard: key.shard,
    leader: placed.leader,
    replicas: placed.replicas,
    generation: placed.generation,
    state: 'active',
  };
  if (key.kind === 'stream' && routing && routing !== 'modulo') a.routing = routing;
  if (floor !== undefined) {
    a.floor_generation = floor.generation;
    if (floor.base !== undefined) a.floor_base = floor.base;
  }
  return a;
}

/**
 * The floor of a shard a pass places as `placed`. A shard whose leader's loss is accepted
 * restarts at the generation it is placed at, continuing the new leader's copy when that
 * leader was a replica (its base), or from nothing: every other copy of it from before may
 * hold records the lost leader acked that the restart will write other records over, so it is
 * discarded (shard-lineages.ts in the broker). Otherwise the floor stays what it was.
 */
function floorAfter(
  current: { leader: string; replicas: readonly string[] } | undefined,
  placed: Assignment,
  was: Floor | undefined,
  lossAccepted: string | undefined,
): Floor | undefined {
  if (current === undefined || current.leader !== lossAccepted) return was;
  // Still led by the lost node (its lease not over): nothing restarted, nothing given up.
  if (placed.leader === lossAccepted) return was;
  const kept = current.replicas.includes(placed.leader);
  return { generation: placed.generation, ...(kept ? { base: placed.leader } : {}) };
}

/**
 * A protected quorum shard's step rule (router placement, `quorum`): its members may change only
 * once its leader has reported at its generation, since it reports only once it opened there,
 * having fenced a majority of the set and taken every acknowledged write.
 */
function quorumOf(
  failover: FailoverPolicy | undefined,
  input: { consistency: string; current: Assignment | undefined; report?: ReplicaReport },
): ShardRequest['quorum'] {
  if (failover === undefined || input.consistency !== 'Quorum') return undefined;
  const { current, report } = input;
  const established =
    current !== undefined &&
    report !== undefined &&
    report.generation === current.generation &&
    report.leader === current.leader;
  return { established };
}

/**
 * The members of a quorum set to drop at once though still routable (ShardRequest's `quorum.
 * leaving`): brokers that deregistered (`left`) leading no shard, when the set's live members
 * without them are short of a majority. A left node stays routable for L + margin after its last
 * heartbeat (cluster/liveness.ts) because it may still hold a lease on what it leads; one that
 * leads nothing holds none. A set of two whose leader handed off on SIGTERM then takes quorum
 * writes again at once instead of after that window; a larger set with a majority still live
 * keeps the member, so a broker back from a restart within the window keeps its copy.
 */
function leavingOf(
  replicas: readonly string[],
  rf: number,
  lifecycle: ReadonlyMap<string, string>,
  leading: ReadonlySet<string>,
): string[] {
  const idle = replicas.filter((id) => lifecycle.get(id) === 'left' && !leading.has(id));
  if (idle.length === 0) return [];
  const live = replicas.filter((id) => ['live', 'draining'].includes(lifecycle.get(id) ?? ''));
  // A broker acks on a majority of the replication factor, or of the set when it is larger.
  return live.length < Math.floor(Math.max(rf, replicas.length) / 2) + 1 ? idle : [];
}

/** A shard's quorum input with its `leaving` members added (leavingOf), over one pass's nodes
 *  and assignments (read before the pass removes any). */
function leaversOf(rows: readonly NodeLiveness[], current: ReadonlyMap<string, AssignmentRecord>) {
  const lifecycle = new Map(rows.map((n) => [n.node_id, n.lifecycle]));
  const leading = new Set([...current.values()].map((a) => a.leader));
  return (q: ShardRequest['quorum'], was: Assignment | undefined, rf: number) => {
    const leaving = leavingOf(was?.replicas ?? [], rf, lifecycle, leading);
    return q === undefined || leaving.length === 0 ? q : { ...q, leaving };
  };
}

/** A move of a shard's leadership to its preferred broker that placement asks its leader for
 *  (cluster/rebalance.ts): the leader hands it off as if leaving, for that shard alone. */
export interface Transfer {
  key: ShardKey;
  /** The assignment's generation, which the leader checks it leads at. */
  generation: number;
  from: string;
  to: string;
}

/**
 * Leaderships to return to preferred brokers (cluster/rebalance.ts), at most
 * LEADER_MOVES_PER_PASS_MAX a pass, never of a shard already being handed off; and, on each
 * request with a hand-off, its preferred member first among the members able to take it (a
 * leaving broker's), or alone (a leader that stays drained it for that member: a transfer).
 */
function rebalanced(
  requests: ShardRequest[],
  pass: {
    rows: readonly NodeLiveness[];
    nodes: readonly PlacementNode[];
    reports: ReadonlyMap<string, ReplicaReport>;
    trust: ReportTrust;
    rebalance: Rebalance;
  },
): Transfer[] {
  const eligible = new Set(pass.nodes.filter((n) => n.eligible).map((n) => n.nodeId));
  const nodes = new Map<string, RebalanceNode>(
    pass.rows.map((n) => [
      n.node_id,
      { serving: eligible.has(n.node_id), registeredAtMs: n.registered_at_ms },
    ]),
  );
  const out: Transfer[] = [];
  // Starting from another shard each second: shards that never move (busy groups, a follower
  // that cannot be level) must not take every one of a pass's asks, pass after pass.
  const start = requests.length === 0 ? 0 : Math.floor(pass.trust.nowMs / 1000) % requests.length;
  for (let i = 0; i < requests.length; i++) {
    const r = requests[(start + i) % requests.length]!;
    const k = r.key;
    if (r.handoff !== undefined && r.current !== undefined) {
      const first = preferredMember(k, r.current.replicas);
      const c = r.handoff.candidates;
      const able = first !== undefined && c.includes(first);
      // A leader that is not leaving drained the shard for its preferred member alone: any
      // other would be asked to move it again (a shard went back and forth in a campaign).
      if (eligible.has(r.current.leader)) r.handoff = able ? { candidates: [first] } : undefined;
      else if (able) r.handoff = { candidates: [first, ...c.filter((id) => id !== first)] };
      continue;
    }
    if (out.length >= LEADER_MOVES_PER_PASS_MAX || r.current === undefined) continue;
    const to = preferredLeaderOf({
      key: k,
      current: r.current,
      report: pass.reports.get(shardId(k.kind, k.tenant, k.namespace, k.name, k.shard)),
      trust: pass.trust,
      quorum: r.quorum !== undefined,
      nodes,
      delayMs: pass.rebalance.delayMs,
    });
    if (to !== undefined)
      out.push({ key: k, generation: r.current.generation, from: r.current.leader, to });
  }
  return out;
}

/** Every assignment, by shard id. */
async function assignmentsByShard(q: Sql): Promise<Map<string, AssignmentRecord>> {
  const current = new Map<string, AssignmentRecord>();
  for (const r of await q.query<Row>('SELECT * FROM shard_assignments')) {
    const a = assignmentOf(r);
    current.set(shardId(a.kind, a.tenant_id, a.namespace, a.stream, a.shard), a);
  }
  return current;
}

export class AssignmentRepository {
  constructor(
    private readonly tx: Transactions,
    /** The resources placement places, read whole on every pass. */
    private readonly kinds: readonly CatalogKind<unknown, unknown>[],
  ) {}

  list(limit: number, cursor?: string, leader?: string): Promise<Page<AssignmentRecord>> {
    return page(this.tx.driver, {
      select: 'SELECT * FROM shard_assignments',
      fixedWhere: leader ? ['leader = $1'] : [],
      fixed: leader ? [leader] : [],
      keyCols: ['tenant_id', 'namespace', 'kind', 'name', 'shard'],
      shape: ['s', 's', 's', 's', 'n'],
      limit,
      cursor,
      map: assignmentOf,
      keyOf: (r) => [str(r.tenant_id), str(r.namespace), str(r.kind), str(r.name), num(r.shard)],
    });
  }

  /** The plan placement would carry out now, without writing it. */
  plan(
    view: PlacementView,
    trust: ReportTrust = TRUST_ALL,
    rebalance: Rebalance = NO_REBALANCE,
  ): Promise<PlanEntry[]> {
    return this.tx.driver.tx(
      async (q) => {
        const { nodes, requests } = await this.placementInputs(q, view, trust, rebalance);
        return planPlacement(requests, nodes);
      },
      { snapshot: true },
    );
  }

  /**
   * One placement pass: reads nodes, resources, assignments and replica reports (believed as
   * `trust` says) under the placement lock, plans, and writes every changed assignment
   * (generation bumped) with its change row.
   */
  pass(
    view: PlacementView,
    trust: ReportTrust = TRUST_ALL,
    rebalance: Rebalance = NO_REBALANCE,
  ): Promise<PlacementOutcome> {
    return this.tx.write((w) => this.passIn(w, view, trust, undefined, rebalance));
  }

  /**
   * An operator's acceptance that node `nodeId` (down or left) is gone with its data: one pass in
   * which the shards it still leads lose their protection, so each goes to its best live replica
   * or, with none, to a fresh empty node at a new generation (docs/control-plane.md,
   * "Accepting a lost node's data"). A shard its lease still covers stays where it is.
   */
  acceptLoss(view: PlacementView, trust: ReportTrust, nodeId: string): Promise<AcceptedLoss> {
    return this.tx.write(async (w) => {
      const rows = await w.q.query<Row>('SELECT lifecycle FROM nodes WHERE node_id = $1', [nodeId]);
      if (rows.length === 0) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
      const life = str(rows[0]!.lifecycle);
      if (life !== 'down' && life !== 'left') {
        throw new NodeStateConflictError(
          `node ${nodeId} is ${life}: only a down or departed node's data can be given up`,
        );
      }
      const out = await this.passIn(w, view, trust, nodeId);
      const led = new Set(
        out.entries
          .filter((e) => e.current?.leader === nodeId)
          .map((e) => shardId(e.key.kind, e.key.tenant, e.key.namespace, e.key.name, e.key.shard)),
      );
      const moved = out.written.filter(
        (a) =>
          a.leader !== nodeId &&
          led.has(shardId(a.kind, a.tenant_id, a.namespace, a.stream, a.shard)),
      );
      const still = await w.q.query<Row>('SELECT shard FROM shard_assignments WHERE leader = $1', [
        nodeId,
      ]);
      return { moved, still_led: still.length };
    });
  }

  /** One pass inside `w`; shards led by `lossAccepted` are placed as if they held nothing. */
  private async passIn(
    w: Write,
    view: PlacementView,
    trust: ReportTrust,
    lossAccepted?: string,
    rebalance: Rebalance = NO_REBALANCE,
  ): Promise<PlacementOutcome> {
    await this.tx.driver.lockPlacement(w.q);
    const inputs = await this.placementInputs(w.q, view, trust, rebalance);
    if (lossAccepted !== undefined) {
      for (const r of inputs.requests) {
        if (r.current?.leader === lossAccepted) {
          // The shard restarts at a floor: every other copy of it is discarded (floorAfter).
          r.failover = undefined;
          r.handoff = undefined;
          r.quorum = undefined;
        } else if (r.quorum && r.current?.replicas.includes(lossAccepted)) {
          // A follower given up leaves a quorum set even under a leader that could not fence.
          r.quorum = { ...r.quorum, lost: [lossAccepted] };
        }
      }
    }
    const entries = planPlacement(inputs.requests, inputs.nodes);
    // A hand-off by a leader still eligible (not leaving) is a transfer to a preferred broker.
    const eligible = new Set(inputs.nodes.filter((n) => n.eligible).map((n) => n.nodeId));
    const transferred = new Set(
      inputs.requests
        .filter((r) => r.handoff !== undefined && eligible.has(r.current?.leader ?? ''))
        .map((r) => shardKeyString(r.key)),
    );
    const fresh: AssignmentRecord[] = [];
    const written: AssignmentRecord[] = [];
    const returned: AssignmentRecord[] = [];
    let unplaced = 0;
    for (const e of entries) {
      if (!e.placement.placed) {
        unplaced++;
        continue;
      }
      if (!e.placement.changed) continue;
      const k = e.key;
      const id = shardId(k.kind, k.tenant, k.namespace, k.name, k.shard);
      const placed = e.placement.assignment;
      const floor = floorAfter(e.current, placed, inputs.floors.get(id), lossAccepted);
      const a = assignmentFor(k, placed, inputs.routing.get(id), floor);
      // Conditional writes: a fresh placement only if no one placed the shard meanwhile, a
      // change only over the generation it was planned from; a lost race writes nothing and
      // the next pass plans again from what is there.
      if (!e.current) fresh.push(a);
      else if (await updateAssignmentIf(w.q, a, e.current.generation, w.nowMs())) {
        written.push(a);
        if (transferred.has(shardKeyString(k)) && a.leader !== e.current.leader) returned.push(a);
        w.change('assignments', 'updated', assignmentKeyOf(a), a);
      }
    }
    for (const a of await insertAssignmentsIfAbsent(w.q, fresh, w.nowMs())) {
      written.push(a);
      w.change('assignments', 'assigned', assignmentKeyOf(a), a);
    }
    // Assignments whose resource is gone (a delete that raced a pass) are removed.
    for (const o of inputs.orphans) {
      if (await deleteAssignmentIf(w.q, o))
        w.change('assignments', 'unassigned', assignmentKeyOf(o));
    }
    return { entries, written, unplaced, returned, transfers: inputs.transfers };
  }

  /** Places a new resource's shards inside its creating write. */
  async placeNew(w: Write, view: PlacementView, r: ShardedResource): Promise<void> {
    const nodes = view(await livenessRows(w.q));
    if (!nodes.some((node) => node.eligible)) return; // a later pass places it
    // Only capacity needs the placement lock: new shards touch no existing assignment, so
    // without caps a create need not wait for (or block) a pass or another create.
    if (nodes.some((node) => node.maxShards > 0)) await this.tx.driver.lockPlacement(w.q);
    const load = new Map<string, number>();
    for (const node of nodes) {
      if (node.maxShards > 0) load.set(node.nodeId, await copiesHeldBy(w.q, node.nodeId));
    }
    // Rows left by a delete that raced a pass: replace them, continuing their generations.
    const stale = await deleteAssignments(w.q, r.tenant_id, r.namespace, r);
    const base = stale.reduce((m, row) => Math.max(m, num(row.generation)), 0);
    const written: AssignmentRecord[] = [];
    for (let shard = 0; shard < r.shards; shard++) {
      const key = {
        kind: r.kind,
        tenant: r.tenant_id,
        namespace: r.namespace,
        name: r.name,
        shard,
      };
      const p = placeShard({ key, replicationFactor: r.replication_factor }, nodes, load);
      if (!p.placed) continue;
      for (const id of p.assignment.replicas) if (load.has(id)) load.set(id, load.get(id)! + 1);
      const placed = { ...p.assignment, generation: base + p.assignment.generation };
      const a = assignmentFor(key, placed, r.routing);
      written.push(a);
      w.change('assignments', 'assigned', assignmentKeyOf(a), a);
    }
    await upsertAssignments(w.q, written, w.nowMs());
  }

  /** Removes the assignments of one resource (its delete), recording each. */
  async removeFor(w: Write, t: string, ns: string, kind: ShardKind, name: string): Promise<void> {
    for (const r of await deleteAssignments(w.q, t, ns, { kind, name }))
      w.change('assignments', 'unassigned', assignmentRowKey(r));
  }

  /** Removes every assignment under `t/ns` (its namespace's delete), recording each. */
  async removeIn(w: Write, t: string, ns: string): Promise<void> {
    for (const r of await deleteAssignments(w.q, t, ns))
      w.change('assignments', 'unassigned', assignmentRowKey(r));
  }

  private async placementInputs(
    q: Sql,
    view: PlacementView,
    trust: ReportTrust,
    rebalance: Rebalance,
  ): Promise<PlacementInputs> {
    const rows = await livenessRows(q);
    const nodes = view(rows);
    const current = await assignmentsByShard(q);
    const withLeaving = leaversOf(rows, current);
    const heardAtMs = new Map(rows.map((n) => [n.node_id, n.last_heartbeat_at_ms]));
    // A node named by an assignment cannot be deleted, so a placed shard's leader always has a
    // row; were it missing, the shard is taken as holding data (the reading that loses nothing).
    const durableById = new Map(rows.map((n) => [n.node_id, n.durable_storage]));
    const onDisk = (id: string) => durableById.get(id) ?? true;
    const reports = await reportsByShard(q);
    const requests: ShardRequest[] = [];
    const routing = new Map<string, Routing | undefined>();
    const floors = new Map<string, Floor>();
    for (const kind of this.kinds) {
      for (const res of await shardedResources(q, kind)) {
        for (let shard = 0; shard < res.shards; shard++) {
          const id = shardId(res.kind, res.tenant_id, res.namespace, res.name, shard);
          const cur = current.get(id);
          current.delete(id);
          routing.set(id, res.routing);
          if (cur?.floor_generation !== undefined)
            floors.set(id, { generation: cur.floor_generation, base: cur.floor_base });
          const was = cur
            ? { leader: cur.leader, replicas: cur.replicas, generation: cur.generation }
            : undefined;
          const policyInput = {
            kind: res.kind,
            // A stream's durability is its catalog's; a cache's is its broker's: once placed on
            // a broker with a data dir, the shard may hold data, whether it reported or not.
            durable:
              res.kind === 'stream'
                ? (res.durable ?? false)
                : was !== undefined && onDisk(was.leader),
            consistency: res.consistency ?? 'Leader',
            current: was,
            report: reports.get(id),
            trust,
            ...(was === undefined ? {} : { leaderHeardAtMs: heardAtMs.get(was.leader) }),
          };
          const failover = failoverPolicy(policyInput);
          const handoff = handoffPolicy(policyInput);
          const prefer = reportedOrder(policyInput);
          requests.push({
            key: {
              kind: res.kind,
              tenant: res.tenant_id,
              namespace: res.namespace,
              name: res.name,
              shard,
            },
            replicationFactor: res.replication_factor,
            current: was,
            failover,
            handoff,
            prefer,
            quorum: withLeaving(quorumOf(failover, policyInput), was, res.replication_factor),
          });
        }
      }
    }
    const transfers = rebalanced(requests, { rows, nodes, reports, trust, rebalance });
    // What is left in `current` matched no resource.
    return { nodes, requests, routing, floors, orphans: [...current.values()], transfers };
  }
}
