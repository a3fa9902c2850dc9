/** The small conversions the shard table makes between a stream's config, an assignment and
 *  the wire's ShardRef, the shard a cache request is of, and the refusal it answers for a shard
 *  another node leads. */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { FeedChange } from './control-plane-client.js';
import { type ShardRef, shardForKey } from '@felix/wire';
import type { StreamConfig } from '../config/types.js';
import { NotLeaderRefusal, Refusal, type ShardOwner } from '../session/refusal.js';
import { streamKey } from '../catalog/catalog.js';
import { posInt, str } from './feed-items.js';

/** What these read of an assignment (shard-table.ts's AssignmentRecord). */
interface AssignmentRecord {
  tenant_id: string;
  namespace: string;
  stream: string;
  shard: number;
  generation: number;
  replicas: string[];
}

const UTF8 = new TextEncoder();

/**
 * The shard (of `width`) a cache, counter or watch request is of: its key's, else the
 * one it names, else 0; null for a prefix watch that names no shard of a multi-shard cache. That
 * is no request of shard 0's: refused as one, every broker but shard 0's leader answered
 * `not_leader`, which a client retried for ever watching nothing. Its handler refuses it, the
 * same on every broker.
 */
export function cacheShardOfMessage(m: Record<string, unknown>, width: number): number | null {
  const key = str(m.key);
  const named = posInt(m.shard);
  if (m.type === 'cache_watch' && key === null && named === null && width > 1) return null;
  return key !== null && key !== '' ? shardForKey(UTF8.encode(key), width, 'modulo') : (named ?? 0);
}

export function sameShape(a: StreamConfig, b: StreamConfig): boolean {
  return a.shards === b.shards && a.durable === b.durable && a.routing === b.routing;
}

export function refOf(s: StreamConfig, shard: number, generation: number): ShardRef {
  return { tenantId: s.tenant, namespace: s.namespace, stream: s.name, shard, generation };
}

/** The ref of an assignment, or of anything naming a shard the same way (a replica report). */
export function refOfAssignment(
  a: Pick<AssignmentRecord, 'tenant_id' | 'namespace' | 'stream' | 'shard' | 'generation'>,
): ShardRef {
  const { tenant_id: tenantId, namespace, stream, shard, generation } = a;
  return { tenantId, namespace, stream, shard, generation };
}

export function idOf(a: AssignmentRecord): {
  tenant: string;
  namespace: string;
  stream: string;
  shard: number;
} {
  return { tenant: a.tenant_id, namespace: a.namespace, stream: a.stream, shard: a.shard };
}

export function idOfStream(s: StreamConfig, shard: number) {
  return { tenant: s.tenant, namespace: s.namespace, stream: s.name, shard };
}

/** The `not_leader` refusal naming `owner`, as broker `self` answers it. */
export function notLeaderRefusal(owner: ShardOwner, self: string): NotLeaderRefusal {
  const where = `${owner.kind} ${owner.tenant}/${owner.namespace}/${owner.name} shard ${owner.shard}`;
  const at = owner.addr !== undefined ? ` (client address ${owner.addr})` : '';
  return new NotLeaderRefusal(
    owner,
    `${where} is led by node ${owner.nodeId}${at} at generation ${owner.generation}, not ${self}`,
  );
}

/**
 * The refusal for a shard `owner` leads, as broker `self` answers it: `not_leader` (a redirect, or
 * a forward for a write), unless the node book says the owner is down or gone. Placement then
 * left the shard with it (no replica qualified yet, or its data is there and nowhere else:
 * docs/control-plane.md, "Placement"), and a redirect could only fail to connect: the shard is
 * unavailable, retryably, until a replica is promoted, the owner returns or an operator accepts
 * its loss.
 */
export function ownerRefusal(
  owner: ShardOwner,
  self: string,
  lifecycle: string | undefined,
): Refusal {
  if (lifecycle !== 'down' && lifecycle !== 'left') return notLeaderRefusal(owner, self);
  const where = `${owner.kind} ${owner.tenant}/${owner.namespace}/${owner.name} shard ${owner.shard}`;
  const gone = lifecycle === 'left' ? 'has left the cluster' : 'is down';
  return new Refusal(
    'shard_unavailable',
    `${where} is led by node ${owner.nodeId}, which ${gone}, and no live replica has taken it over yet: the shard is unavailable until one is promoted, that node returns or an operator accepts its loss (leader_not_live)`,
    'leader_not_live',
    { detail: { reason: 'leader_not_live' } },
  );
}

/** The refusal of a request for a shard this node does not serve and no other node does. */
export function unservedRefusal(
  where: string,
  reason: string,
  failure: { reason: string } | undefined,
  waiting?: string,
): Refusal {
  if (reason === 'not_assigned')
    return new Refusal(
      'shard_unavailable',
      `${where} is not assigned (not_assigned)`,
      'not_assigned',
    );
  if (failure !== undefined)
    return new Refusal(
      'shard_unavailable',
      `${where} failed to open: ${failure.reason}`,
      'shard_failed',
    );
  if (waiting !== undefined)
    return new Refusal(
      'shard_unavailable',
      `${where} is not served: ${waiting} (not_ready)`,
      'not_ready',
    );
  return new Refusal('shard_unavailable', `${where} is still opening (not_ready)`, 'not_ready');
}

/** How many of the `held` shards have a replica set smaller than their replication factor. */
export function underReplicated(
  held: Iterable<string>,
  assignments: ReadonlyMap<string, AssignmentRecord>,
  configs: ReadonlyMap<string, { replication_factor?: number }>,
): number {
  let n = 0;
  for (const key of held) {
    const a = assignments.get(key);
    if (a === undefined) continue;
    const c = configs.get(streamKey(a.tenant_id, a.namespace, a.stream));
    if (a.replicas.length < (c?.replication_factor ?? 1)) n++;
  }
  return n;
}

/** The under-replicated gauge, read from `count` at each scrape. */
export function underReplicatedGauge(registry: Registry, count: () => number): void {
  new Gauge({
    name: 'felix_broker_under_replicated_shards',
    help: 'Stream and cache shards this broker leads whose replica set holds fewer copies than their replication factor (placement found no live broker for the rest), at scrape time',
    registers: [registry],
    collect() {
      this.set(count());
    },
  });
}

/** Replicated shards (stream or cache) the assignments name `nodeId` leader of. */
export function ledWithCopies(
  assignments: Iterable<{ leader: string; replicas: readonly string[] }>,
  nodeId: string,
): number {
  let n = 0;
  for (const a of assignments) if (a.leader === nodeId && a.replicas.length > 1) n++;
  return n;
}

/** The stream key a catalog feed change names. */
export function streamKeyOfChange(c: FeedChange): string {
  return streamKey(String(c.key.tenant_id), String(c.key.namespace), String(c.key.stream));
}

/** Removes `key` from `map`, answering what it held. */
export function takeOut<V>(map: Map<string, V>, key: string): V | undefined {
  const v = map.get(key);
  map.delete(key);
  return v;
}

/**
 * After the assignments feed's sequence went back (the control plane's database restored from
 * a backup), keeps each entry this broker knew at a newer generation than the snapshot names:
 * generations only grow, and the leader of the newer one goes on leading and reports it, which
 * moves the control plane's assignment past it (docs/operations.md, "Backups"). Answers how many
 * were kept.
 */
export function keepNewerGenerations<A extends { generation: number }>(
  before: ReadonlyMap<string, A>,
  now: Map<string, A>,
  log: Logger,
): number {
  let kept = 0;
  for (const [key, a] of before) {
    const fresh = now.get(key);
    if (fresh === undefined || fresh.generation >= a.generation) continue;
    now.set(key, a);
    kept++;
  }
  if (kept > 0)
    log.warn(
      { kept },
      'the control plane named older generations than this broker holds (its database restored?): keeping the newer until it moves past them',
    );
  return kept;
}

export const NEEDS_DATA_DIR =
  'a durable stream needs durable.data_dir (FELIX_DURABLE_STORAGE_DIR) on this broker';

/** The catalog's latest config of an installed stream (retention and consistency may change). */
export function latestConfig(
  streams: ReadonlyMap<string, StreamConfig>,
  installed: StreamConfig,
): StreamConfig {
  return streams.get(streamKey(installed.tenant, installed.namespace, installed.name)) ?? installed;
}
