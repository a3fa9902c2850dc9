/**
 * The one registry of every broker setting: its YAML key, its environment variable, its type,
 * default and meaning. The loader, `--print-config` and docs/broker-config.md all follow it;
 * a test checks the doc lists every entry.
 */
import {
  AUTH_TIMEOUT_MS_DEFAULT,
  CACHE_HOT_BYTES_DEFAULT,
  CACHE_HOT_BYTES_MAX,
  CLIENT_CONNECTIONS_DEFAULT,
  DRAIN_TIMEOUT_MS_DEFAULT,
  FRAME_BYTES_DEFAULT,
  FRAME_BYTES_MAX,
  FSYNC_INTERVAL_MS_DEFAULT,
  GROUP_ATTEMPTS_MAX_DEFAULT,
  GROUP_IN_FLIGHT_CEILING,
  GROUP_IN_FLIGHT_MAX_DEFAULT,
  GROUP_POLL_BYTES_CEILING,
  GROUP_POLL_BYTES_MAX_DEFAULT,
  GROUP_POLL_RECORDS_MAX,
  GROUP_VISIBILITY_MS_CEILING,
  GROUP_VISIBILITY_MS_DEFAULT,
  GROUP_VISIBILITY_MS_MAX_DEFAULT,
  GROUP_WAIT_MS_MAX_DEFAULT,
  GROUP_WAIT_RECHECK_MS,
  GROUP_WAIT_RECHECK_MS_MAX,
  HTTP_PORT_DEFAULT,
  LISTEN_PORT_DEFAULT,
  PREAUTH_FRAME_BYTES_DEFAULT,
  PUBLISH_WINDOW_DEFAULT,
  PUBLISH_WINDOW_MAX,
  RETENTION_CHECK_INTERVAL_MS_DEFAULT,
  RING_BYTES_DEFAULT,
  RING_RECORDS_DEFAULT,
  RING_RECORDS_MAX,
  SEGMENT_BYTES_DEFAULT,
  SUBSCRIBER_QUEUE_BATCHES_DEFAULT,
  SUBSCRIBER_QUEUE_BATCHES_MAX,
  WATCH_QUEUE_CAPACITY_DEFAULT,
  WATCH_QUEUE_CAPACITY_MAX,
} from '../limits.js';

export type VarType = 'int' | 'bool' | 'string' | 'enum' | 'list';
export type ConfigValue = number | boolean | string | string[] | null;

export interface ConfigVar {
  /** Dotted YAML path, e.g. `broker.port`. */
  key: string;
  /** Environment variable. */
  env: string;
  type: VarType;
  default: ConfigValue;
  doc: string;
  min?: number;
  max?: number;
  /** Allowed values of an `enum`, or of each item of a `list`. */
  values?: readonly string[];
}

export const FSYNC_MODES = ['none', 'periodic', 'onCommit'] as const;
export const TRANSPORTS = ['quic', 'tls'] as const;
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** Environment variable naming the YAML config file (not itself a config key). */
export const CONFIG_FILE_ENV = 'FELIX_BROKER_CONFIG';
/** Prefixes the broker owns: an unknown variable under one of them is a startup error. */
export const OWNED_ENV_PREFIXES = [
  'FELIX_BROKER_',
  'FELIX_DURABLE_',
  'FELIX_MEMORY_',
  'FELIX_GROUP_',
] as const;

const PORT = { min: 0, max: 65_535 };

export const CONFIG_VARS: readonly ConfigVar[] = [
  {
    key: 'broker.host',
    env: 'FELIX_BROKER_HOST',
    type: 'string',
    default: '127.0.0.1',
    doc: 'Address the client listeners bind.',
  },
  {
    key: 'broker.port',
    env: 'FELIX_BROKER_PORT',
    type: 'int',
    default: LISTEN_PORT_DEFAULT,
    ...PORT,
    doc: 'Client port: QUIC on UDP and TLS on TCP share it unless `quic_port`/`tls_port` say otherwise. 0 picks a free port.',
  },
  {
    key: 'broker.quic_port',
    env: 'FELIX_BROKER_QUIC_PORT',
    type: 'int',
    default: null,
    ...PORT,
    doc: 'UDP port of the QUIC listener (default: `broker.port`).',
  },
  {
    key: 'broker.tls_port',
    env: 'FELIX_BROKER_TLS_PORT',
    type: 'int',
    default: null,
    ...PORT,
    doc: 'TCP port of the TLS listener (default: `broker.port`).',
  },
  {
    key: 'broker.transports',
    env: 'FELIX_BROKER_TRANSPORTS',
    type: 'list',
    default: ['quic', 'tls'],
    values: TRANSPORTS,
    doc: 'Client listeners to start, comma-separated in the environment.',
  },
  {
    key: 'broker.tls_cert',
    env: 'FELIX_BROKER_TLS_CERT',
    type: 'string',
    default: null,
    doc: 'PEM certificate file. Unset: a self-signed development certificate kept in the data dir (or a temp dir).',
  },
  {
    key: 'broker.tls_key',
    env: 'FELIX_BROKER_TLS_KEY',
    type: 'string',
    default: null,
    doc: 'PEM PKCS#8 key file; required with `tls_cert`.',
  },
  {
    key: 'broker.http_host',
    env: 'FELIX_BROKER_HTTP_HOST',
    type: 'string',
    default: '127.0.0.1',
    doc: 'Address of the HTTP listener (/live, /ready, /metrics).',
  },
  {
    key: 'broker.http_port',
    env: 'FELIX_BROKER_HTTP_PORT',
    type: 'int',
    default: HTTP_PORT_DEFAULT,
    ...PORT,
    doc: 'Port of the HTTP listener. 0 picks a free port.',
  },
  {
    key: 'broker.auth_timeout_ms',
    env: 'FELIX_BROKER_AUTH_TIMEOUT_MS',
    type: 'int',
    default: AUTH_TIMEOUT_MS_DEFAULT,
    min: 1,
    max: 600_000,
    doc: 'A connection that authenticates no stream within this is closed with code 1 (`authentication timeout`).',
  },
  {
    key: 'broker.preauth_max_frame_bytes',
    env: 'FELIX_BROKER_PREAUTH_MAX_FRAME_BYTES',
    type: 'int',
    default: PREAUTH_FRAME_BYTES_DEFAULT,
    min: 256,
    max: FRAME_BYTES_MAX,
    doc: 'Largest frame payload accepted before `auth`; a larger header ends the stream.',
  },
  {
    key: 'broker.max_frame_bytes',
    env: 'FELIX_BROKER_MAX_FRAME_BYTES',
    type: 'int',
    default: FRAME_BYTES_DEFAULT,
    min: 1024,
    max: FRAME_BYTES_MAX,
    doc: 'Largest frame payload accepted after `auth`.',
  },
  {
    key: 'broker.publish_window',
    env: 'FELIX_BROKER_PUBLISH_WINDOW',
    type: 'int',
    default: PUBLISH_WINDOW_DEFAULT,
    min: 0,
    max: PUBLISH_WINDOW_MAX,
    doc: 'Unanswered publishes per client stream before the broker stops reading it; 0 disables pipelining.',
  },
  {
    key: 'broker.subscriber_queue_capacity',
    env: 'FELIX_BROKER_SUBSCRIBER_QUEUE_CAPACITY',
    type: 'int',
    default: SUBSCRIBER_QUEUE_BATCHES_DEFAULT,
    min: 1,
    max: SUBSCRIBER_QUEUE_BATCHES_MAX,
    doc: 'Envelopes (published batches) one subscriber may have queued; past it new events are dropped for that subscriber.',
  },
  {
    key: 'broker.max_client_connections',
    env: 'FELIX_BROKER_MAX_CLIENT_CONNECTIONS',
    type: 'int',
    default: CLIENT_CONNECTIONS_DEFAULT,
    min: 1,
    max: 1_000_000,
    doc: 'Client connections held at once; further ones are closed on arrival.',
  },
  {
    key: 'broker.drain_timeout_ms',
    env: 'FELIX_BROKER_DRAIN_TIMEOUT_MS',
    type: 'int',
    default: DRAIN_TIMEOUT_MS_DEFAULT,
    min: 0,
    max: 600_000,
    doc: 'SIGTERM drain bound: in-flight acks and log closes get this long, then the process exits.',
  },
  {
    key: 'broker.log_level',
    env: 'FELIX_BROKER_LOG_LEVEL',
    type: 'enum',
    default: 'info',
    values: LOG_LEVELS,
    doc: 'pino log level (JSON lines on stdout).',
  },
  {
    key: 'durable.data_dir',
    env: 'FELIX_DURABLE_STORAGE_DIR',
    type: 'string',
    default: null,
    doc: 'Root of the durable logs. Unset: an in-memory broker, and a `durable: true` stream is a startup error.',
  },
  {
    key: 'durable.fsync_mode',
    env: 'FELIX_DURABLE_FSYNC_MODE',
    type: 'enum',
    default: 'periodic',
    values: FSYNC_MODES,
    doc: 'Default fsync mode of durable streams: `none`, `periodic` or `onCommit`.',
  },
  {
    key: 'durable.fsync_interval_ms',
    env: 'FELIX_DURABLE_FSYNC_INTERVAL_MS',
    type: 'int',
    default: FSYNC_INTERVAL_MS_DEFAULT,
    min: 1,
    max: 60_000,
    doc: 'Flush interval of `periodic` streams.',
  },
  {
    key: 'durable.segment_bytes',
    env: 'FELIX_DURABLE_SEGMENT_BYTES',
    type: 'int',
    default: SEGMENT_BYTES_DEFAULT,
    min: 4096,
    max: 2 ** 40,
    doc: 'Segment rollover size.',
  },
  {
    key: 'durable.retention_check_interval_ms',
    env: 'FELIX_DURABLE_RETENTION_INTERVAL_MS',
    type: 'int',
    default: RETENTION_CHECK_INTERVAL_MS_DEFAULT,
    min: 10,
    max: 86_400_000,
    doc: 'How often retention runs on each durable log.',
  },
  {
    key: 'memory.ring_records',
    env: 'FELIX_MEMORY_RING_RECORDS',
    type: 'int',
    default: RING_RECORDS_DEFAULT,
    min: 1,
    max: RING_RECORDS_MAX,
    doc: 'Records the in-memory ring of each shard keeps: all an in-memory stream holds, and the replay window of a durable one.',
  },
  {
    key: 'memory.ring_bytes',
    env: 'FELIX_MEMORY_RING_BYTES',
    type: 'int',
    default: RING_BYTES_DEFAULT,
    min: 1024,
    max: 2 ** 34,
    doc: 'Payload bytes the ring of each shard keeps.',
  },
  {
    key: 'broker.watch_queue_capacity',
    env: 'FELIX_BROKER_WATCH_QUEUE_CAPACITY',
    type: 'int',
    default: WATCH_QUEUE_CAPACITY_DEFAULT,
    min: 1,
    max: WATCH_QUEUE_CAPACITY_MAX,
    doc: 'Cache changes one watcher may have queued; past it the watch is ended with `cache_watch_lagged`.',
  },
  {
    key: 'broker.cache_hot_bytes',
    env: 'FELIX_BROKER_CACHE_HOT_BYTES',
    type: 'int',
    default: CACHE_HOT_BYTES_DEFAULT,
    min: 0,
    max: CACHE_HOT_BYTES_MAX,
    doc: 'Bytes of current cache values kept in memory in front of the cache logs (each held as its encoded `cache_value` answer, about 4/3 of the value plus key and cache names), least recently used out first; 0 turns it off (every get reads the log).',
  },
  {
    key: 'groups.visibility_timeout_ms',
    env: 'FELIX_GROUP_VISIBILITY_TIMEOUT_MS',
    type: 'int',
    default: GROUP_VISIBILITY_MS_DEFAULT,
    min: 1,
    max: GROUP_VISIBILITY_MS_CEILING,
    doc: 'Claim length of a polled record when the poll names no `visibility_ms`; a lapsed claim is owed to the next poller.',
  },
  {
    key: 'groups.max_visibility_ms',
    env: 'FELIX_GROUP_MAX_VISIBILITY_MS',
    type: 'int',
    default: GROUP_VISIBILITY_MS_MAX_DEFAULT,
    min: 1,
    max: GROUP_VISIBILITY_MS_CEILING,
    doc: 'Ceiling on a poll `visibility_ms`, a `group_extend` and a nack `delay_ms`.',
  },
  {
    key: 'groups.max_attempts',
    env: 'FELIX_GROUP_MAX_ATTEMPTS',
    type: 'int',
    default: GROUP_ATTEMPTS_MAX_DEFAULT,
    min: 1,
    max: 1000,
    doc: 'Deliveries of one record before it is recorded as a dead letter and the group moves on.',
  },
  {
    key: 'groups.max_in_flight',
    env: 'FELIX_GROUP_MAX_IN_FLIGHT',
    type: 'int',
    default: GROUP_IN_FLIGHT_MAX_DEFAULT,
    min: 1,
    max: GROUP_IN_FLIGHT_CEILING,
    doc: 'Unsettled (claimed) records per group per shard; polls at the cap answer empty and wait for room.',
  },
  {
    key: 'groups.max_poll_records',
    env: 'FELIX_GROUP_MAX_POLL_RECORDS',
    type: 'int',
    default: GROUP_POLL_RECORDS_MAX,
    min: 1,
    max: GROUP_POLL_RECORDS_MAX,
    doc: 'Records one poll answer carries at most (a larger `max_records` is clamped).',
  },
  {
    key: 'groups.max_poll_bytes',
    env: 'FELIX_GROUP_MAX_POLL_BYTES',
    type: 'int',
    default: GROUP_POLL_BYTES_MAX_DEFAULT,
    min: 1024,
    max: GROUP_POLL_BYTES_CEILING,
    doc: 'Payload bytes one poll answer carries at most (one record always fits).',
  },
  {
    key: 'groups.max_wait_ms',
    env: 'FELIX_GROUP_MAX_WAIT_MS',
    type: 'int',
    default: GROUP_WAIT_MS_MAX_DEFAULT,
    min: 0,
    max: 600_000,
    doc: 'Ceiling on a long poll `wait_ms` (a larger one is clamped).',
  },
  {
    key: 'groups.wait_recheck_ms',
    env: 'FELIX_GROUP_WAIT_RECHECK_MS',
    type: 'int',
    default: GROUP_WAIT_RECHECK_MS,
    min: 1,
    max: GROUP_WAIT_RECHECK_MS_MAX,
    doc: 'How often a waiting poll re-checks its group even when nothing woke it (a publish, a settle or a claim lapsing wakes it at once).',
  },
  {
    key: 'cluster.controlplane_url',
    env: 'FELIX_CONTROLPLANE_URL',
    type: 'string',
    default: null,
    doc: 'Base URL of the control plane (`http://host:8443`). Set: the broker registers, heartbeats and serves the shards assigned to it, and the file may declare no streams or caches. Unset: the standalone YAML catalog.',
  },
  {
    key: 'cluster.node_id',
    env: 'FELIX_NODE_ID',
    type: 'string',
    default: null,
    doc: "This broker's node id in the control plane. Unset: `<hostname>-<client port>`.",
  },
  {
    key: 'cluster.advertise_addr',
    env: 'FELIX_NODE_ADVERTISE_ADDR',
    type: 'string',
    default: null,
    doc: 'Broker-internal address registered with the control plane (unique per node). Unset: the client address (there is no internal listener yet).',
  },
  {
    key: 'cluster.client_advertise_addr',
    env: 'FELIX_CLIENT_ADVERTISE_ADDR',
    type: 'string',
    default: null,
    doc: 'Client address (`host:port`) registered and named in `not_leader` refusals. Unset: `broker.host` and the client port.',
  },
  {
    key: 'cluster.zone',
    env: 'FELIX_NODE_ZONE',
    type: 'string',
    default: null,
    doc: 'Zone registered with the control plane (placement spreads replicas across zones).',
  },
  {
    key: 'cluster.labels',
    env: 'FELIX_NODE_LABELS',
    type: 'string',
    default: null,
    doc: 'Labels registered with the control plane: comma-separated `key=value` items.',
  },
  {
    key: 'cluster.max_shards',
    env: 'FELIX_NODE_MAX_SHARDS',
    type: 'int',
    default: 0,
    min: 0,
    max: 1_000_000,
    doc: 'Capacity registered with the control plane: shard copies this broker may hold; 0 means no cap.',
  },
  {
    key: 'cluster.feed_wait_ms',
    env: 'FELIX_CONTROLPLANE_FEED_WAIT_MS',
    type: 'int',
    default: 20_000,
    min: 0,
    max: 25_000,
    doc: 'Long-poll wait of each change-feed request (the control plane caps it at 25 s).',
  },
];

/** Keys allowed inside one `streams[]` entry of the YAML file. */
export const STREAM_KEYS = [
  'tenant',
  'namespace',
  'name',
  'shards',
  'durable',
  'fsync',
  'fsync_interval_ms',
  'retention',
  'routing',
] as const;
export const RETENTION_KEYS = ['max_bytes', 'max_age_seconds'] as const;
/** Keys allowed inside one `caches[]` entry. */
export const CACHE_KEYS = [
  'tenant',
  'namespace',
  'name',
  'shards',
  'durable',
  'default_ttl_ms',
] as const;
/** Top-level YAML sections. */
export const TOP_KEYS = [
  'broker',
  'durable',
  'memory',
  'groups',
  'cluster',
  'streams',
  'caches',
] as const;
