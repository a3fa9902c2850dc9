/** The small conversions the shard table makes between a stream's config, an assignment and
 *  the wire's ShardRef, and the `not_leader` refusal it answers. */
import type { ShardRef } from '@felix/wire';
import type { StreamConfig } from '../config/types.js';
import { NotLeaderRefusal, type ShardOwner } from '../session/refusal.js';

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
