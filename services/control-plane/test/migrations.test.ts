// Goal: two control planes starting together on one Postgres apply each migration exactly once
// and both come up ready. Method: two stores opened concurrently (separate pools, separate
// sessions, so the advisory lock is really contended) in a fresh schema, then both apps probed.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../src/open-store.js';
import type { ControlStore } from '../src/store/store.js';
import { MIGRATIONS, POSTGRES_URL, freshSchema, testApp } from './helpers.js';

const schema = freshSchema();
const stores: ControlStore[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  const c = new pg.Client({ connectionString: POSTGRES_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await c.end();
});

describe('migrations', () => {
  it('a_migration_runs_once_under_concurrent_starts', async () => {
    const config = {
      backend: 'postgres' as const,
      sqlitePath: '',
      postgresUrl: POSTGRES_URL,
      postgresSchema: schema,
      postgresMaxConnections: 4,
      postgresConnectTimeoutMs: 5000,
      changeRetentionRows: 1000,
    };
    const started = await Promise.all([openStore(config), openStore(config), openStore(config)]);
    stores.push(...started);
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    const rows = await c.query(
      `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
    );
    await c.end();
    expect(rows.rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
    for (const store of started) {
      const { app } = await testApp(store, { background: false });
      const ready = await app.inject({ method: 'GET', url: '/v1/system/ready' });
      expect(ready.statusCode).toBe(200);
      expect(ready.json().schema_version).toBe(MIGRATIONS[MIGRATIONS.length - 1]!.version);
      await app.close();
    }
  });
});
