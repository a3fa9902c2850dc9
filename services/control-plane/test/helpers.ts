/** Test support: stores on both backends (Postgres in a fresh schema per store) and apps over them. */
import { randomBytes } from 'node:crypto';
import { tempDir } from '@felix/testing-harness';
import type { Clock } from '../src/clock.js';
import type { LivenessConfig } from '../src/config.js';
import { type AppDeps, buildApp } from '../src/http/app.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import { PostgresDriver } from '../src/store/postgres.js';
import { SqliteDriver } from '../src/store/sqlite.js';
import { ControlStore } from '../src/store/store.js';

export const POSTGRES_URL =
  process.env.FELIX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type Backend = 'sqlite' | 'postgres';

export interface OpenedStore {
  store: ControlStore;
  cleanup(): Promise<void>;
}

/** A clock that moves only when told to (wall and monotonic together). */
export class ManualClock implements Clock {
  constructor(
    private wallMs = Date.now(),
    private mono = 0,
  ) {}
  nowMs(): number {
    return this.wallMs;
  }
  monoMs(): number {
    return this.mono;
  }
  advance(ms: number): void {
    this.wallMs += ms;
    this.mono += ms;
  }
}

export function freshSchema(): string {
  return `felix_cp_test_${randomBytes(6).toString('hex')}`;
}

export async function openTestStore(
  backend: Backend,
  opts: { changeRetentionRows?: number; schema?: string; clock?: Clock } = {},
): Promise<OpenedStore> {
  const changeRetentionRows = opts.changeRetentionRows ?? 10_000;
  const clock = opts.clock ? { clock: opts.clock } : {};
  if (backend === 'sqlite') {
    const dir = await tempDir('felix-cp');
    const store = new ControlStore(new SqliteDriver(`${dir.path}/cp.sqlite`), {
      changeRetentionRows,
      ...clock,
    });
    await store.migrate();
    return {
      store,
      async cleanup() {
        await store.close();
        await dir.cleanup();
      },
    };
  }
  const schema = opts.schema ?? freshSchema();
  const driver = new PostgresDriver({
    url: POSTGRES_URL,
    schema,
    maxConnections: 8,
    connectTimeoutMs: 5000,
  });
  const store = new ControlStore(driver, { changeRetentionRows, ...clock });
  await store.migrate();
  return {
    store,
    async cleanup() {
      await driver.dropSchema();
      await store.close();
    },
  };
}

export const FAST_LIVENESS: LivenessConfig = {
  heartbeatIntervalMs: 200,
  expiryTimeoutMs: 800,
  regrantMarginMs: 200,
  sweepIntervalMs: 50,
  reconcileIntervalMs: 200,
};

export const SLOW_LIVENESS: LivenessConfig = {
  heartbeatIntervalMs: 5000,
  expiryTimeoutMs: 15_000,
  regrantMarginMs: 3750,
  sweepIntervalMs: 2000,
  reconcileIntervalMs: 60_000,
};

export async function testApp(store: ControlStore, deps: Partial<AppDeps> = {}) {
  const built = await buildApp({ store, liveness: SLOW_LIVENESS, ...deps });
  await built.app.ready();
  return built;
}

export { MIGRATIONS };
