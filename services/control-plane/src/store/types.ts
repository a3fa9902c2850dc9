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
  /** Assigned at creation, never reused: brokers tell a name created again from the one whose
   *  files they hold. '' for one created before the control plane assigned them. */
  uid: string;
}

export interface Cache {
  tenant_id: string;
  namespace: string;
  cache: string;
  display_name: string;
  shards: number;
  replication_factor: number;
  consistency: Consistency;
  /** The TTL of a put that names none (null: such values never expire). */
  default_ttl_ms: number | null;
  /** As a stream's `uid`. */
  uid: string;
}

export interface NodeSpec {
  advertise_addr: string;
  client_addr: string | null;
  region: string;
  zone: string | null;
  labels: Record<string, string>;
  capacity: { max_shards: number; weight: number };
  /**
   * The broker keeps its logs on disk (a data dir): a shard it led may hold data, so placement
   * never reopens it empty elsewhere (docs/control-plane.md, "Placement").
   */
  durable_storage: boolean;
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
  durable_storage: boolean;
  /** When the node's current incarnation registered. */
  registered_at_ms: number;
}

export interface RegisterInput extends Omit<NodeSpec, 'durable_storage'> {
  node_id: string;
  /** Absent (a broker that does not say): taken as durable, the reading that loses nothing. */
  durable_storage?: boolean;
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
  /**
   * Present (above 0) once an accepted loss moved the shard: the generation it restarted at.
   * A broker's copy of the shard from before it, but for `floor_base`'s, holds data given up
   * and is discarded before the broker serves or follows the shard (docs/control-plane.md,
   * "Accepting a lost node's data"). Kept through later generations.
   */
  floor_generation?: number;
  /** The replica whose copy the restart continued (absent: it restarted empty). */
  floor_base?: string;
}

/** Why a leader stopped shipping to a follower until it is repaired. */
export type HaltReason = 'diverged' | 'needs_bootstrap';

/** What a shard's leader last said its replicas hold (docs/replication.md, replica reports). */
export interface ReplicaReport extends AssignmentKey {
  /** The generation the leader leads at; a report is believed only at the assignment's. */
  generation: number;
  leader: string;
  /** One past the leader's own last durable record. */
  leader_offset: number;
  /** The commit mark the leader computed (0 when it keeps none: `Leader` consistency). */
  commit_offset: number;
  /** Each follower's confirmed (durable) offset, as the leader's cursor counts it. */
  replica_offsets: { node_id: string; durable_offset: number }[];
  halted: { node_id: string; reason: HaltReason }[];
  /**
   * Followers the leader rebuilt at this generation (their copy discarded and restarted at
   * `base`): folded in, they are no longer halted and their offset is what this report says,
   * not the most any report said. Not stored: what it changes is.
   */
  rebuilt?: { node_id: string; base: number }[];
  /**
   * The creation id of the stream or cache the reporter leads (the catalog's `uid`), from a
   * broker that heard `replica_report_uid`. Only a report naming the catalog's current creation
   * may move an assignment past its generation (a restored database). Not stored.
   */
  uid?: string;
  /**
   * The leader is leaving (SIGTERM hand-off): it admits no more writes to the shard and every
   * log of it is durable; `caught_up` names the followers holding every log to its end.
   */
  drained: boolean;
  caught_up: string[];
  /**
   * The followers that held the leader's whole log at some moment within its lag window
   * (`cluster.replica_lag_max_ms`, the broker's): a `Leader` stream may fail over to them.
   */
  in_sync: string[];
  reported_at_ms: number;
}

/** What the control plane made of one shard's report. */
export type ReportOutcome =
  | 'accepted'
  | 'stale'
  | 'not_leader'
  | 'unassigned'
  | 'future_generation';

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

// ---- auth state (migration 2)

/** `staged`: published in the JWKS, verifies, does not sign; `active`: signs; `retired`: gone from the JWKS. */
export type SigningKeyStatus = 'staged' | 'active' | 'retired';

/** A tenant's signing key as listed (public part only). */
export interface SigningKeyInfo {
  tenant_id: string;
  kid: string;
  alg: 'EdDSA';
  status: SigningKeyStatus;
  created_at_ms: number;
  /** The public JWK (`kty`, `crv`, `x`, `kid`, `alg`, `use`). */
  public_jwk: {
    kty: 'OKP';
    crv: 'Ed25519';
    x: string;
    kid: string;
    alg: 'EdDSA';
    use: 'sig';
  };
}

/** A signing key with its private JWK: only the token-signing module reads this. */
export interface StoredSigningKey extends SigningKeyInfo {
  private_jwk: Record<string, unknown>;
}

/** An upstream OIDC issuer a tenant accepts for token exchange. */
export interface IdpIssuer {
  tenant_id: string;
  issuer: string;
  audiences: string[];
  jwks_url: string | null;
  discovery_url: string | null;
  subject_claim: string;
  groups_claim: string | null;
}

/** One RBAC policy row: `role` may do `action` on `object` (`action:object` is a permission). */
export interface RbacPolicy {
  tenant_id: string;
  role: string;
  action: string;
  object: string;
}

/** One binding: `subject` (a principal id, or `group:<issuer>#<name>`) holds `role`. */
export interface RbacBinding {
  tenant_id: string;
  subject: string;
  role: string;
}

export type RefreshTokenState = 'live' | 'spent' | 'revoked';

/** A stored refresh token (the secret itself is never stored, only its SHA-256). */
export interface RefreshTokenRecord {
  id: string;
  tenant_id: string;
  principal_id: string;
  chain_id: string;
  parent_id: string | null;
  state: RefreshTokenState;
  created_at_ms: number;
  expires_at_ms: number;
  /** IdP groups at exchange (`<issuer>#<name>`), so a refresh re-evaluates group bindings. */
  groups: string[];
  /** The narrowing asked for at exchange, re-applied on every refresh (null: none). */
  requested: string[] | null;
  resources: string[] | null;
  audience: string | null;
}

export interface NewRefreshToken {
  id: string;
  /** The secret handed to the caller; the store keeps only its SHA-256. */
  secret: string;
  tenant_id: string;
  principal_id: string;
  chain_id: string;
  parent_id: string | null;
  expires_at_ms: number;
  groups?: string[];
  requested?: string[] | null;
  resources?: string[] | null;
  audience?: string | null;
}

/** What spending a refresh token found; only `spent` carries the token. */
export type SpendOutcome =
  | { outcome: 'spent'; token: RefreshTokenRecord }
  /** Already spent: the whole chain is now revoked. */
  | { outcome: 'replayed'; revoked: number }
  /** The secret did not match: the token is spent anyway (no guessing twice). */
  | { outcome: 'wrong_secret' }
  | { outcome: 'expired' }
  | { outcome: 'revoked' }
  | { outcome: 'unknown' };
