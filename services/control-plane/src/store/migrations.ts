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
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The bookkeeping table both engines create before anything else. */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version BIGINT PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at_ms BIGINT NOT NULL)`;
