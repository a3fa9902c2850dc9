/**
 * `waitServed`: every shard of every stream and cache of the cluster's namespace has a leader in
 * the control plane's assignments that is a running broker, ready, and (for streams) holding as
 * many shards as it is assigned (`felix_broker_cluster_shards_held`).
 */
import { HTTP_CALL_DEADLINE_MS, scaled } from '../limits.js';
import type { Broker } from './broker.js';

export interface ShardSet {
  kind: 'stream' | 'cache';
  name: string;
  shards: number;
}

export interface Assignment {
  tenant_id: string;
  namespace: string;
  kind: 'stream' | 'cache';
  stream: string;
  shard: number;
  leader: string;
  /** Every node holding a copy, the leader included. */
  replicas: string[];
  generation: number;
  /** The generation an accepted loss restarted the shard at, empty (absent: never). */
  floor_generation?: number;
  /** The replica whose copy that restart continued (absent: it restarted empty). */
  floor_base?: string;
}

async function ready(b: Broker): Promise<boolean> {
  const res = await fetch(`${b.httpUrl}/ready`, {
    signal: AbortSignal.timeout(scaled(HTTP_CALL_DEADLINE_MS)),
  });
  await res.arrayBuffer();
  return res.status === 200;
}

export async function shardsHeld(b: Broker): Promise<number> {
  const text = await b.metrics();
  return Number(/^felix_broker_cluster_shards_held (\d+)/m.exec(text)?.[1] ?? -1);
}

/**
 * Why the cluster is not served yet, or null when it is. `assignments` are every assignment of
 * the control plane (all tenants: a broker's held gauge counts them all).
 */
export async function unserved(
  expected: readonly ShardSet[],
  assignments: readonly Assignment[],
  where: { tenant: string; namespace: string },
  brokers: readonly Broker[],
): Promise<string | null> {
  const byId = new Map(brokers.map((b) => [b.id, b]));
  const leaders = new Map<string, string>();
  for (const a of assignments) {
    if (a.tenant_id === where.tenant && a.namespace === where.namespace) {
      leaders.set(`${a.kind}/${a.stream}/${a.shard}`, a.leader);
    }
  }
  const used = new Set<Broker>();
  for (const set of expected) {
    for (let shard = 0; shard < set.shards; shard++) {
      const leader = leaders.get(`${set.kind}/${set.name}/${shard}`);
      if (leader === undefined) return `${set.kind} ${set.name}/${shard} has no leader`;
      const b = byId.get(leader);
      if (b === undefined) return `${set.kind} ${set.name}/${shard} is led by unknown ${leader}`;
      if (b.state !== 'running') {
        return `${set.kind} ${set.name}/${shard} is led by ${leader}, which is ${b.state}`;
      }
      used.add(b);
    }
  }
  for (const b of used) {
    if (!(await ready(b))) return `${b.id} is not ready`;
    const assigned = assignments.filter((a) => a.kind === 'stream' && a.leader === b.id).length;
    const held = await shardsHeld(b);
    if (held !== assigned) return `${b.id} holds ${held} stream shards of the ${assigned} it leads`;
  }
  return null;
}
