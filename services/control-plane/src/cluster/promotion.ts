/**
 * Who may take over a shard when its leader is lost (docs/replication.md, "Replica reports and
 * promotion"): a pure function of the shard's settings, its assignment and the leader's last
 * report. A durable stream's log must never come back shorter than what its consistency
 * promised. Under `Quorum` only a replica holding at least the commit mark may lead. Under
 * `Leader` (acked on the leader alone) a replica may lead when it holds the leader's whole
 * reported log or when the report names it in sync (it held the leader's whole log within the
 * leader's lag window, Kafka's ISR): what it lacks is the documented `leader` exposure, and a
 * follower out of sync longer than the window never leads. A halted follower (diverged, needs a
 * bootstrap) never qualifies, nor does anyone when the report is missing, from another leader
 * or a later generation, or older than the trust window. Candidates come most caught-up first.
 * A durable single copy has no candidate: it waits for its owner.
 *
 * A cache's durability is the broker's (the catalog does not say): a cache shard is protected
 * once it is led by a broker that registered with durable storage (it may hold data whether or
 * not it ever reported: a broker without an internal listener never does) or once its leader has
 * reported logs shipped to followers. The bound is the leader's whole reported cache log, and a
 * `Leader` cache, whose writes are acked by its leader alone as a `Leader` stream's are, may also
 * go to a follower the report names in sync (in sync on both its cache and counter logs). A
 * `Quorum` cache keeps the whole-log bound: its report speaks of the cache log's mark only, and
 * its new leader takes no furthest tail. Without a report a protected cache shard, like a durable
 * stream, has no candidate and waits for its owner (or an operator's accept-loss). Only a cache
 * shard led by an in-memory broker, which never reported, moves freely: its values died with it.
 */
import type { Assignment, FailoverPolicy, ShardKind } from '@felix/router';
import type { LivenessConfig } from '../config.js';
import type { Consistency, ReplicaReport } from '../store/types.js';

/**
 * Which stored reports placement may believe: those stamped within `trustMs` of `nowMs`, or of
 * the moment the reporting leader's lease lapsed (`expiryMs` after it was last heard) when that
 * is earlier. A leader past its lease writes nothing more, so its last report ages no further:
 * a caught-up replica that returns long after its leader died is still known to be caught up.
 */
export interface ReportTrust {
  nowMs: number;
  trustMs: number;
  /** How long a broker may lead after its last heartbeat; absent: reports age with `nowMs`. */
  expiryMs?: number;
}

/** Every report believed, however old (tests and the dry-run default). */
export const TRUST_ALL: ReportTrust = { nowMs: 0, trustMs: Number.POSITIVE_INFINITY };

/** A report is trusted for 2 × expiry + 1 heartbeat: long enough to outlive its leader's down-marking. */
export function reportTrust(l: LivenessConfig, nowMs: number): ReportTrust {
  return {
    nowMs,
    trustMs: 2 * l.expiryTimeoutMs + l.heartbeatIntervalMs,
    expiryMs: l.expiryTimeoutMs,
  };
}

/** The moment a report's age is taken at: now, or its silent leader's lease end if earlier. */
function agedAtMs(trust: ReportTrust, leaderHeardAtMs: number | undefined): number {
  if (trust.expiryMs === undefined || leaderHeardAtMs === undefined) return trust.nowMs;
  return Math.min(trust.nowMs, leaderHeardAtMs + trust.expiryMs);
}

export interface PromotionInput {
  kind: ShardKind;
  /** A stream: the catalog's `durable`; a cache: its current leader keeps its logs on disk. */
  durable: boolean;
  consistency: Consistency;
  current: Assignment | undefined;
  report: ReplicaReport | undefined;
  trust: ReportTrust;
  /** When the current leader was last heard (its last heartbeat), if it is a known node. */
  leaderHeardAtMs?: number;
}

/** The offset a replica must hold to take over, or null when the report cannot be believed. */
export function caughtUpBound(input: PromotionInput): number | null {
  const { current, report, trust } = input;
  if (current === undefined || report === undefined) return null;
  // A report of an earlier generation of the same leader still holds: the generation moved
  // because the follower set changed (a dead follower dropped) while that leader went on
  // leading the same log, and what its followers confirmed they still hold.
  if (report.generation > current.generation || report.leader !== current.leader) return null;
  if (agedAtMs(trust, input.leaderHeardAtMs) - report.reported_at_ms > trust.trustMs) return null;
  // A quorum shard's acks wait for a majority, so what was acked is at most the commit mark: a
  // candidate holding it holds every ack, and the new leader's fence takes the furthest tail of
  // the majority it fences (of each log, for a cache: its cache and counter logs). A cache's
  // report names its cache log's mark. The leader's whole log was the bound before, which
  // followers never reach under steady writes (a record is always on its way).
  return input.consistency === 'Quorum' ? report.commit_offset : report.leader_offset;
}

/** Whether a shard's logs need protecting at failover: a durable stream, or a cache shard led by
 *  a durable broker or whose leader reported shipped logs (a report exists only where they are). */
function protectedShard(input: PromotionInput): boolean {
  if (input.kind === 'stream') return input.durable;
  return input.durable || input.report !== undefined;
}

/**
 * The failover policy of one shard, or undefined when its log has nothing to protect (an
 * in-memory stream; a cache shard of an in-memory broker that never reported shipped logs).
 */
export function failoverPolicy(input: PromotionInput): FailoverPolicy | undefined {
  if (!protectedShard(input)) return undefined;
  const bound = caughtUpBound(input);
  if (bound === null || input.report === undefined || input.current === undefined)
    return { candidates: sameSetCandidates(input) };
  const halted = new Set(input.report.halted.map((h) => h.node_id));
  const members = new Set(input.current.replicas);
  // `Leader` acks promise nothing past the leader's own log, for a stream or a cache alike: what
  // an in-sync follower lacks is that consistency's documented exposure.
  const inSync = new Set(input.consistency === 'Leader' ? input.report.in_sync : []);
  const able = input.report.replica_offsets.filter(
    (o) =>
      (o.durable_offset >= bound || inSync.has(o.node_id)) &&
      !halted.has(o.node_id) &&
      members.has(o.node_id) &&
      o.node_id !== input.current!.leader,
  );
  able.sort(mostCaughtUpFirst);
  return { candidates: able.map((o) => o.node_id) };
}

/**
 * A quorum shard whose leader never reported (promoted, then lost before its first report) over
 * exactly the set the previous leader's report names: a failover keeps the members (router
 * placement, `quorum`), so a new leader fencing a majority of that same set overlaps every
 * majority that acked at either generation, and takes the furthest tail. Any member but the
 * lost leader and the halted may lead that held the commit mark in that report, the most caught
 * up first. Found by review: the shard waited for the lost leader itself. A member behind that
 * mark may not (CI: with the previous leader dead too it was the only one live, and was
 * promoted behind the mark); the shard waits for one at it, as any failover does.
 */
function sameSetCandidates(input: PromotionInput): string[] {
  const { current, report } = input;
  if (input.consistency !== 'Quorum' || current === undefined || report === undefined) return [];
  if (report.leader === current.leader || report.generation >= current.generation) return [];
  const reported = new Set([report.leader, ...report.replica_offsets.map((o) => o.node_id)]);
  const members = new Set(current.replicas);
  if (reported.size !== members.size || [...members].some((id) => !reported.has(id))) return [];
  const halted = new Set(report.halted.map((h) => h.node_id));
  // The previous leader held its whole log: it ranks first.
  const held = [
    ...report.replica_offsets,
    { node_id: report.leader, durable_offset: report.leader_offset },
  ];
  return held
    .filter(
      (o) =>
        o.node_id !== current.leader &&
        !halted.has(o.node_id) &&
        o.durable_offset >= report.commit_offset,
    )
    .sort(mostCaughtUpFirst)
    .map((o) => o.node_id);
}

/** Replicas by what they hold, the most first; ties by node id. */
function mostCaughtUpFirst(
  a: { node_id: string; durable_offset: number },
  b: { node_id: string; durable_offset: number },
): number {
  return (
    b.durable_offset - a.durable_offset ||
    (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0)
  );
}

/**
 * The members the leader's believed report names, most caught up first (halted ones left out:
 * their log parted from the leader's): the order placement takes live replicas in where no
 * policy decides, as after an operator accepted a node's loss. Empty without a report.
 */
export function reportedOrder(input: PromotionInput): string[] {
  const { report, current } = input;
  if (report === undefined || current === undefined) return [];
  const halted = new Set(report.halted.map((h) => h.node_id));
  return report.replica_offsets
    .filter((o) => !halted.has(o.node_id) && current.replicas.includes(o.node_id))
    .sort(mostCaughtUpFirst)
    .map((o) => o.node_id);
}

/**
 * Whom a leaving leader hands a shard to (docs/replication.md, "Hand-off on SIGTERM"): only
 * when its believed report, at the assignment's own generation, says it is drained (it admits
 * no more writes and every log is durable), the followers it names as holding every log that
 * also hold its whole stream log, most caught up first. Undefined when there is no hand-off: the
 * shard stays with its leader (and, once that leader is gone, waits for the failover path).
 */
export function handoffPolicy(input: PromotionInput): FailoverPolicy | undefined {
  const { current, report, trust } = input;
  if (current === undefined || report === undefined || !report.drained) return undefined;
  if (report.generation !== current.generation || report.leader !== current.leader)
    return undefined;
  if (trust.nowMs - report.reported_at_ms > trust.trustMs) return undefined;
  const halted = new Set(report.halted.map((h) => h.node_id));
  const holding = new Set(report.caught_up);
  const able = report.replica_offsets.filter(
    (o) =>
      o.durable_offset >= report.leader_offset &&
      holding.has(o.node_id) &&
      !halted.has(o.node_id) &&
      current.replicas.includes(o.node_id) &&
      o.node_id !== current.leader,
  );
  able.sort(mostCaughtUpFirst);
  return able.length === 0 ? undefined : { candidates: able.map((o) => o.node_id) };
}
