/**
 * Versioned schema migrations, shared by both engines (the SQL sticks to TEXT and BIGINT).
 * Migrations are additive: never edit an applied one, append a new version.
 */
import type { Migration } from './sql.js';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'catalog, membership, assignments, feeds',
    statements: [
      `CREATE TABLE tenants (
        tenant_id TEXT PRIMARY KEY,
        display_name TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL)`,
      `CREATE TABLE namespaces (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        namespace TEXT NOT NULL,
        display_name TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, namespace))`,
      `CREATE TABLE streams (
        tenant_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        stream TEXT NOT NULL,
        shards BIGINT NOT NULL,
        replication_factor BIGINT NOT NULL,
        retention_max_age_seconds BIGINT,
        retention_max_size_bytes BIGINT,
        consistency TEXT NOT NULL,
        durable BIGINT NOT NULL,
        routing TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, namespace, stream),
        FOREIGN KEY (tenant_id, namespace) REFERENCES namespaces(tenant_id, namespace) ON DELETE CASCADE)`,
      `CREATE TABLE caches (
        tenant_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        cache TEXT NOT NULL,
        display_name TEXT NOT NULL,
        shards BIGINT NOT NULL,
        replication_factor BIGINT NOT NULL,
        consistency TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, namespace, cache),
        FOREIGN KEY (tenant_id, namespace) REFERENCES namespaces(tenant_id, namespace) ON DELETE CASCADE)`,
      `CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        advertise_addr TEXT NOT NULL UNIQUE,
        client_addr TEXT,
        region TEXT NOT NULL,
        zone TEXT,
        labels TEXT NOT NULL,
        capacity_max_shards BIGINT NOT NULL,
        capacity_weight BIGINT NOT NULL,
        lifecycle TEXT NOT NULL,
        incarnation BIGINT NOT NULL,
        last_heartbeat_at_ms BIGINT NOT NULL,
        registered_at_ms BIGINT NOT NULL)`,
      `CREATE TABLE shard_assignments (
        tenant_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        shard BIGINT NOT NULL,
        leader TEXT NOT NULL,
        replicas TEXT NOT NULL,
        generation BIGINT NOT NULL,
        state TEXT NOT NULL,
        routing TEXT,
        updated_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, namespace, kind, name, shard))`,
      'CREATE INDEX shard_assignments_by_leader ON shard_assignments (leader)',
      `CREATE TABLE feed_seq (
        feed TEXT PRIMARY KEY,
        last_seq BIGINT NOT NULL)`,
      `INSERT INTO feed_seq (feed, last_seq) VALUES
        ('tenants', 0), ('namespaces', 0), ('streams', 0), ('caches', 0), ('assignments', 0)`,
      `CREATE TABLE changes (
        feed TEXT NOT NULL,
        seq BIGINT NOT NULL,
        op TEXT NOT NULL,
        key TEXT NOT NULL,
        payload TEXT,
        ts_ms BIGINT NOT NULL,
        PRIMARY KEY (feed, seq))`,
    ],
  },
  {
    version: 2,
    name: 'auth: signing keys, bootstrap flag, idp issuers, rbac, refresh tokens',
    statements: [
      'ALTER TABLE tenants ADD COLUMN bootstrapped BIGINT NOT NULL DEFAULT 0',
      `CREATE TABLE tenant_signing_keys (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        kid TEXT NOT NULL,
        alg TEXT NOT NULL,
        private_jwk TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, kid))`,
      // At most one active key per tenant, whatever races: the index refuses a second.
      `CREATE UNIQUE INDEX tenant_signing_keys_one_active ON tenant_signing_keys (tenant_id)
        WHERE status = 'active'`,
      `CREATE TABLE idp_issuers (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        issuer TEXT NOT NULL,
        audiences TEXT NOT NULL,
        jwks_url TEXT,
        discovery_url TEXT,
        subject_claim TEXT NOT NULL,
        groups_claim TEXT,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, issuer))`,
      `CREATE TABLE rbac_policies (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        action TEXT NOT NULL,
        object TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, role, action, object))`,
      `CREATE TABLE rbac_bindings (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        subject TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, subject, role))`,
      'CREATE INDEX rbac_bindings_by_role ON rbac_bindings (tenant_id, role)',
      `CREATE TABLE refresh_tokens (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id) ON DELETE CASCADE,
        principal_id TEXT NOT NULL,
        secret_sha256 TEXT NOT NULL,
        chain_id TEXT NOT NULL,
        parent_id TEXT,
        state TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        groups_json TEXT NOT NULL,
        requested_json TEXT,
        resources_json TEXT,
        audience TEXT)`,
      'CREATE INDEX refresh_tokens_by_chain ON refresh_tokens (chain_id)',
      'CREATE INDEX refresh_tokens_by_principal ON refresh_tokens (tenant_id, principal_id)',
      'CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at_ms)',
    ],
  },
  {
    version: 3,
    name: 'replica reports: what each shard leader last said its replicas hold',
    statements: [
      // One row per shard (its latest report); removed with the shard's assignment.
      `CREATE TABLE replica_reports (
        tenant_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        shard BIGINT NOT NULL,
        generation BIGINT NOT NULL,
        leader TEXT NOT NULL,
        leader_offset BIGINT NOT NULL,
        commit_offset BIGINT NOT NULL,
        offsets TEXT NOT NULL,
        halted TEXT NOT NULL,
        reported_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, namespace, kind, name, shard))`,
    ],
  },
  {
    version: 4,
    name: 'replica reports: a leaving leader says it is drained and which followers hold every log',
    statements: [
      'ALTER TABLE replica_reports ADD COLUMN drained BIGINT NOT NULL DEFAULT 0',
      "ALTER TABLE replica_reports ADD COLUMN caught_up TEXT NOT NULL DEFAULT '[]'",
    ],
  },
  {
    version: 5,
    name: 'replica reports: the followers in sync within the leader lag window',
    statements: ["ALTER TABLE replica_reports ADD COLUMN in_sync TEXT NOT NULL DEFAULT '[]'"],
  },
  {
    version: 6,
    name: 'catalog: a creation id per stream and cache, so a name created again is told apart',
    statements: [
      "ALTER TABLE streams ADD COLUMN uid TEXT NOT NULL DEFAULT ''",
      "ALTER TABLE caches ADD COLUMN uid TEXT NOT NULL DEFAULT ''",
    ],
  },
  {
    version: 7,
    name: 'nodes: whether a broker keeps its logs on disk (a cache shard it led may hold data)',
    // A node registered before this column existed may well be durable: 1 protects its shards.
    statements: ['ALTER TABLE nodes ADD COLUMN durable_storage BIGINT NOT NULL DEFAULT 1'],
  },
  {
    version: 8,
    name: 'assignments: where an accepted loss restarted a shard (generation, copy kept)',
    // 0: the shard's copies all descend from its first placement, as every row did before.
    statements: [
      'ALTER TABLE shard_assignments ADD COLUMN floor_generation BIGINT NOT NULL DEFAULT 0',
      'ALTER TABLE shard_assignments ADD COLUMN floor_base TEXT',
    ],
  },
  {
    version: 9,
    name: 'caches: a default TTL for puts that name none',
    // NULL: values written without a TTL keep no expiry, as before.
    statements: ['ALTER TABLE caches ADD COLUMN default_ttl_ms BIGINT'],
  },
  {
    version: 10,
    name: 'replica reports: which incarnation of the leader sent the stored one, and its number',
    // 0: a report stored before (or from a broker that does not number its reports).
    statements: [
      'ALTER TABLE replica_reports ADD COLUMN reporter_incarnation BIGINT NOT NULL DEFAULT 0',
      'ALTER TABLE replica_reports ADD COLUMN report_seq BIGINT NOT NULL DEFAULT 0',
    ],
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The bookkeeping table both engines create before anything else. */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version BIGINT PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at_ms BIGINT NOT NULL)`;
