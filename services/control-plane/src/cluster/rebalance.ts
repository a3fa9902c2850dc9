/**
 * Leaders return to their preferred brokers (docs/replication.md, "Leaders return to their
 * preferred brokers"). A failover or a SIGTERM hand-off moves a shard's leadership to a follower
 * and nothing moves it back, so after a rolling restart the brokers restarted last lead little or
 * nothing while others lead most shards. A `quorum` shard's preferred member is the member of its
 * set that rendezvous hashing ranks first, the broker a fresh placement makes its leader; once
 * that broker has been registered for the rebalance delay and its leader's latest report names
 * it in sync, placement moves the leadership back over the same set in a new generation. The new
 * leader fences a majority of the set before it serves, as any quorum leader does, so no
 * acknowledged write is lost (Kafka's preferred-leader election is the same step). `leader`
 * shards are never moved this way: a follower may lack writes its leader acked alone. A pure
 * function of its inputs.
 */
import { type Assignment, type ShardKey, rankNodes } from '@felix/router';
import type { ReplicaReport } from '../store/types.js';
import type { ReportTrust } from './promotion.js';

/** What placement knows of one node for this decision. */
export interface RebalanceNode {
  /** Registered, `live` (not draining, down or left) and heard within its window. */
  serving: boolean;
  /** When its current incarnation registered. */
  registeredAtMs: number;
}

export interface RebalanceInput {
  key: ShardKey;
  current: Assignment | undefined;
  report: ReplicaReport | undefined;
  trust: ReportTrust;
  /** The shard is a protected `quorum` shard (its placement request carries `quorum`). */
  quorum: boolean;
  nodes: ReadonlyMap<string, RebalanceNode>;
  /** How long the preferred broker must have been registered; 0 turns rebalancing off. */
  delayMs: number;
}

/** The member of a set that leads when it is placed afresh: rendezvous rank's first. */
export function preferredMember(key: ShardKey, replicas: readonly string[]): string | undefined {
  return rankNodes(
    key,
    replicas.map((nodeId) => ({ nodeId })),
  )[0]?.nodeId;
}

/**
 * The member to move a shard's leadership to now, or undefined: only a `quorum` shard whose
 * every member is serving, whose leader has reported at its generation within the trust window
 * (it fenced and holds every acknowledged write) naming the preferred member in sync and not
 * halted, and whose preferred member registered at least `delayMs` ago.
 */
export function preferredLeaderOf(input: RebalanceInput): string | undefined {
  const { current, report, trust, nodes } = input;
  if (input.delayMs <= 0 || !input.quorum || current === undefined || report === undefined)
    return undefined;
  if (current.replicas.length < 2) return undefined;
  if (report.generation !== current.generation || report.leader !== current.leader)
    return undefined;
  if (trust.nowMs - report.reported_at_ms > trust.trustMs) return undefined;
  if (!current.replicas.every((id) => nodes.get(id)?.serving === true)) return undefined;
  const preferred = preferredMember(input.key, current.replicas);
  if (preferred === undefined || preferred === current.leader) return undefined;
  if (!report.in_sync.includes(preferred)) return undefined;
  if (report.halted.some((h) => h.node_id === preferred)) return undefined;
  const since = nodes.get(preferred)!.registeredAtMs;
  return trust.nowMs - since >= input.delayMs ? preferred : undefined;
}
