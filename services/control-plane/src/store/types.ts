/** The records the store keeps and the API returns (snake_case, as on the wire). */
import type { ShardKind } from '@felix/router';

export type Consistency = 'Leader' | 'Quorum';
export type Routing = 'modulo' | 'jump_hash';
export type Lifecycle = 'live' | 'draining' | 'down' | 'left';

export interface Tenant {
  tenant_id: string;
  display_name: string;
}

export interface Namespace {
  tenant_id: string;
  namespace: string;
  display_name: string;
}

export interface Retention {
  max_age_seconds: number | null;
  max_size_bytes: number | null;
}

export interface Stream {
  tenant_id: string;
  namespace: string;
  stream: string;
  kind: 'Stream';
  shards: number;
  replication_factor: number;
  retention: Retention;
  consistency: Consistency;
  durable: boolean;
  routing: Routing;
}

export interface Cache {
  tenant_id: string;
  namespace: string;
  cache: string;
  display_name: string;
  shards: number;
  replication_factor: number;
  consistency: Consistency;
}

export interface NodeSpec {
  advertise_addr: string;
  client_addr: string | null;
  region: string;
  zone: string | null;
  labels: Record<string, string>;
  capacity: { max_shards: number; weight: number };
}

export interface NodeRecord {
  node_id: string;
  spec: NodeSpec;
  status: {
    lifecycle: Lifecycle;
    incarnation: number;
    last_heartbeat_at_ms: number;
    registered_at_ms: number;
  };
}

/** The few node fields placement reads (a narrow row, so placing a shard stays cheap). */
export interface NodeLiveness {
  node_id: string;
  zone: string | null;
  lifecycle: Lifecycle;
  last_heartbeat_at_ms: number;
  max_shards: number;
}

export interface RegisterInput extends NodeSpec {
  node_id: string;
  incarnation: number;
}

export interface AssignmentKey {
  tenant_id: string;
  namespace: string;
  kind: ShardKind;
  stream: string;
  shard: number;
}

export interface AssignmentRecord extends AssignmentKey {
  leader: string;
  replicas: string[];
  generation: number;
  state: 'active';
  routing?: Routing;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export type FeedName = 'tenants' | 'namespaces' | 'streams' | 'caches' | 'assignments';
export const FEEDS: readonly FeedName[] = [
  'tenants',
  'namespaces',
  'streams',
  'caches',
  'assignments',
];

export type CatalogOp = 'created' | 'updated' | 'deleted';
export type AssignmentOp = 'assigned' | 'updated' | 'unassigned';

export interface ChangeRecord {
  seq: number;
  op: CatalogOp | AssignmentOp;
  key: Record<string, string | number>;
  /** The resource after the change (absent on deletes); `assignment` on the assignments feed. */
  item?: unknown;
  assignment?: unknown;
}

export interface ChangesPage {
  items: ChangeRecord[];
  next_seq: number;
}

export interface Snapshot {
  items: unknown[];
  next_seq: number;
}
