/** The small conversions the shard table makes between a stream's config, an assignment and
 *  the wire's ShardRef, and the refusal it answers for a shard another node leads. */
import type { ShardRef } from '@felix/wire';
import type { StreamConfig } from '../config/types.js';
import { NotLeaderRefusal, Refusal, type ShardOwner } from '../session/refusal.js';

/** What these read of an assignment (shard-table.ts's AssignmentRecord). */
interface AssignmentRecord {
  tenant_id: string;
  namespace: string;
  stream: string;
  shard: number;
  generation: number;
}

export function sameShape(a: StreamConfig, b: StreamConfig): boolean {
  return a.shards === b.shards && a.durable === b.durable && a.routing === b.routing;
}

export function refOf(s: StreamConfig, shard: number, generation: number): ShardRef {
  return { tenantId: s.tenant, namespace: s.namespace, stream: s.name, shard, generation };
}

export function refOfAssignment(a: AssignmentRecord): ShardRef {
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
 * left the shard with it because its data is there and nowhere else (docs/control-plane.md,
 * "Placement"), and a redirect could only fail to connect: the shard is unavailable, retryably,
 * until the owner returns or an operator accepts its loss.
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
    `${where} is led by node ${owner.nodeId}, which ${gone}; it holds the shard's only data, so the shard is unavailable until that node returns or an operator accepts its loss (leader_not_live)`,
    'leader_not_live',
    { detail: { reason: 'leader_not_live' } },
  );
}
