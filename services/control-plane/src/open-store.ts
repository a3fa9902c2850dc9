/** Opens the configured store (SQLite file or Postgres) and applies its migrations. */
import type { Clock } from './clock.js';
import type { ControlPlaneConfig } from './config.js';
import { PostgresDriver } from './store/postgres.js';
import type { SqlDriver } from './store/sql.js';
import { SqliteDriver } from './store/sqlite.js';
import { ControlStore } from './store/store.js';

export async function openStore(
  config: Pick<
    ControlPlaneConfig,
    | 'backend'
    | 'sqlitePath'
    | 'postgresUrl'
    | 'postgresSchema'
    | 'postgresMaxConnections'
    | 'postgresConnectTimeoutMs'
    | 'changeRetentionRows'
  >,
  opts: { clock?: Clock } = {},
): Promise<ControlStore> {
  let driver: SqlDriver;
  if (config.backend === 'postgres') {
    driver = new PostgresDriver({
      url: config.postgresUrl!,
      schema: config.postgresSchema,
      maxConnections: config.postgresMaxConnections,
      connectTimeoutMs: config.postgresConnectTimeoutMs,
    });
  } else {
    driver = new SqliteDriver(config.sqlitePath);
  }
  const store = new ControlStore(driver, {
    changeRetentionRows: config.changeRetentionRows,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  try {
    await store.migrate();
  } catch (err) {
    // The migration error is the one worth reporting; a failed close adds nothing to it.
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}
