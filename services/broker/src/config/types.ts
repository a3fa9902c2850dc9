/** The merged, validated broker configuration, shaped like the YAML file that can express it. */
import type {
  AUTH_MODES,
  FSYNC_MODES,
  GROUP_CURSOR_FSYNC_MODES,
  LOG_LEVELS,
  TRANSPORTS,
} from './registry.js';

export type FsyncModeName = (typeof FSYNC_MODES)[number];
export type TransportName = (typeof TRANSPORTS)[number];
export type AuthModeName = (typeof AUTH_MODES)[number];
export type LogLevel = (typeof LOG_LEVELS)[number];
export type GroupCursorFsyncName = (typeof GROUP_CURSOR_FSYNC_MODES)[number];

export interface StreamConfig {
  tenant: string;
  namespace: string;
  name: string;
  shards: number;
  durable: boolean;
  fsync: FsyncModeName;
  fsync_interval_ms: number;
  retention: { max_bytes: number | null; max_age_seconds: number | null };
  routing: 'modulo' | 'jump_hash';
  /** When a publish is acked and what readers see: on the leader's own durability (`leader`,
   *  the default), or once a majority of the replica set holds it (`quorum`, catalog streams
   *  that are replicated; docs/replication.md). */
  consistency?: 'leader' | 'quorum';
  /** Copies the control plane keeps of each shard, the leader counted (catalog streams): a
   *  `quorum` majority is of at least this many, however many followers the set has now. */
  replication_factor?: number;
  /** Its groups' cursor durability; absent: `groups.cursor_fsync` (catalog streams too). */
  group_cursor_fsync?: GroupCursorFsyncName;
  /** Its `periodic` groups' cursor write interval; absent: `groups.cursor_fsync_interval_ms`. */
  group_cursor_fsync_interval_ms?: number;
  /** Catalog streams: the control plane's creation id (cluster/name-incarnations.ts); absent
   *  from one created before the control plane assigned them. */
  uid?: string;
}

export interface CacheConfig {
  tenant: string;
  namespace: string;
  name: string;
  shards: number;
  durable: boolean;
  default_ttl_ms: number | null;
  /** Catalog caches: when a write is acked and what readers see (docs/replication.md); absent:
   *  `leader`. */
  consistency?: 'leader' | 'quorum';
  /** Catalog caches: copies of each shard, the leader included; absent: 1. */
  replication_factor?: number;
  /** Catalog caches: the control plane's creation id, as a stream's. */
  uid?: string;
}

export interface BrokerConfig {
  broker: {
    host: string;
    port: number;
    quic_port: number | null;
    tls_port: number | null;
    transports: TransportName[];
    tls_cert: string | null;
    tls_key: string | null;
    http_host: string;
    http_port: number;
    auth_timeout_ms: number;
    partial_frame_deadline_ms: number;
    preauth_max_frame_bytes: number;
    max_frame_bytes: number;
    publish_window: number;
    publish_quorum_timeout_ms: number;
    subscriber_queue_capacity: number;
    subscriber_queue_bytes: number;
    max_client_connections: number;
    connections_per_ip_max: number;
    drain_timeout_ms: number;
    drain_peer_close_ms: number;
    log_level: LogLevel;
    watch_queue_capacity: number;
    cache_hot_bytes: number;
    cache_expiry_interval_ms: number;
    connection_partial_frame_bytes: number;
    connection_answer_bytes: number;
    inflight_request_bytes: number;
  };
  durable: {
    data_dir: string | null;
    fsync_mode: FsyncModeName;
    fsync_interval_ms: number;
    segment_bytes: number;
    retention_check_interval_ms: number;
  };
  memory: { ring_records: number; ring_bytes: number };
  groups: {
    visibility_timeout_ms: number;
    max_visibility_ms: number;
    max_attempts: number;
    max_in_flight: number;
    max_poll_records: number;
    max_poll_bytes: number;
    max_wait_ms: number;
    wait_recheck_ms: number;
    cursor_fsync: GroupCursorFsyncName;
    cursor_fsync_interval_ms: number;
  };
  cluster: {
    controlplane_url: string | null;
    node_id: string | null;
    advertise_addr: string | null;
    client_advertise_addr: string | null;
    zone: string | null;
    labels: string | null;
    max_shards: number;
    feed_wait_ms: number;
    node_token: string | null;
    node_token_file: string | null;
    peer_probe_interval_ms: number;
    replica_lag_max_ms: number;
    internal_bind: string | null;
    internal_transport: 'quic' | 'tls';
    internal_tls_cert: string | null;
    internal_tls_key: string | null;
    internal_tls_ca: string | null;
    internal_allow_unauthenticated: boolean;
  };
  auth: {
    mode: AuthModeName;
    keys_file: string | null;
    dev_with_controlplane: boolean;
  };
  /** Test-only fault seams (docs/reliability.md); both null in production. */
  testing: { storage_fault_file: string | null; partition_file: string | null };
  streams: StreamConfig[];
  caches: CacheConfig[];
}
