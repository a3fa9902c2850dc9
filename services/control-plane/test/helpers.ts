/** Test support: stores on both backends (Postgres in a fresh schema per store) and apps over them. */
import { randomBytes } from 'node:crypto';
import { tempDir } from '@felix/testing-harness';
import { type Audience, CONTROL_PLANE_AUDIENCE } from '@felix/authz';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { newSigningKey } from '../src/auth/keys.js';
import { TokenSigner } from '../src/auth/signer.js';
import type { Clock } from '../src/clock.js';
import type { LivenessConfig } from '../src/config.js';
import { type AppDeps, buildApp } from '../src/http/app.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import type { NodeLiveness } from '../src/store/types.js';
import type { PlacementNode } from '@felix/router';
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

/** The tenant whose admins are the tests' operators. */
export const OPERATOR_TENANT = 'operator';
/** What an operator may do: create and delete tenants, see and manage every node. */
export const OPERATOR_PERMISSIONS = [
  'tenant.manage:cluster:*',
  'node.view:cluster:*',
  'node.manage:cluster:*',
] as const;

/**
 * Mints tokens for tests, straight from the store: bootstraps the operator tenant on first use,
 * and bootstraps a tenant that exists but was never initialized (one created through the API)
 * before minting its admin's token. Tokens are cached per (tenant, permissions, audience).
 */
export class TestTokens {
  private readonly signer: TokenSigner;
  private readonly minted = new Map<string, Promise<string>>();

  constructor(private readonly store: ControlStore) {
    this.signer = new TokenSigner(store, store.clock);
  }

  operator(): Promise<string> {
    return this.mint(OPERATOR_TENANT, OPERATOR_PERMISSIONS);
  }

  /** `tenant.manage:tenant:T` (every namespace, stream and cache of T); undefined when T does not exist. */
  async tenantAdmin(tenant: string): Promise<string | undefined> {
    if (!(await this.exists(tenant))) return undefined;
    return this.mint(tenant, [`tenant.manage:tenant:${tenant}`]);
  }

  /** A token of `tenant` (bootstrapped here when needed) holding exactly `permissions`. */
  mint(
    tenant: string,
    permissions: readonly string[],
    opts: { audience?: Audience; subject?: string; lifetimeS?: number } = {},
  ): Promise<string> {
    const audience = opts.audience ?? CONTROL_PLANE_AUDIENCE;
    const subject = opts.subject ?? `test-${tenant}`;
    const key = JSON.stringify([tenant, permissions, audience, subject, opts.lifetimeS]);
    let token = this.minted.get(key);
    if (!token) {
      token = this.ensureInitialized(tenant).then(async () => {
        const m = await this.signer.mint({
          tenant,
          subject,
          audience,
          permissions,
          ...(opts.lifetimeS === undefined ? {} : { lifetimeS: opts.lifetimeS }),
        });
        return m.token;
      });
      this.minted.set(key, token);
      token.catch(() => this.minted.delete(key));
    }
    return token;
  }

  /** The token a test caller would use for `url`: the tenant's admin below /v1/tenants/{t}/, else the operator. */
  async forUrl(url: string): Promise<string | undefined> {
    const parts = url.split('?')[0]!.split('/');
    if (parts[2] === 'tenants' && parts.length >= 5) return this.tenantAdmin(parts[3]!);
    return this.operator();
  }

  private async exists(tenant: string): Promise<boolean> {
    return this.store.tenants.get(tenant).then(
      () => true,
      () => false,
    );
  }

  private async ensureInitialized(tenant: string): Promise<void> {
    if (await this.store.bootstrap.isBootstrapped(tenant)) return;
    await this.store.bootstrap
      .initialize({
        tenant_id: tenant,
        display_name: tenant,
        key: await newSigningKey(),
        issuers: [],
        roles: [],
        bindings: [],
      })
      .catch((err: unknown) => {
        // Another mint initialized it first: what we wanted.
        if ((err as { code?: string }).code !== 'FELIX_CONTROLPLANE_ALREADY_INITIALIZED') throw err;
      });
  }
}

export type Inject = (opts: InjectOptions & { url: string }) => Promise<LightMyRequestResponse>;

/**
 * An app over `store` with `tokens` to mint test credentials and `inject`, which sends the
 * token `tokens.forUrl` picks unless the request carries its own Authorization header (or
 * `authorization: ''` to send none).
 */
export async function testApp(store: ControlStore, deps: Partial<AppDeps> = {}) {
  const built = await buildApp({ store, liveness: SLOW_LIVENESS, ...deps });
  await built.app.ready();
  const tokens = new TestTokens(store);
  const inject: Inject = async (opts) => {
    const headers = { ...((opts.headers as Record<string, string> | undefined) ?? {}) };
    if (headers.authorization === undefined) {
      const token = await tokens.forUrl(opts.url);
      if (token) headers.authorization = `Bearer ${token}`;
    } else if (headers.authorization === '') delete headers.authorization;
    return built.app.inject({ ...opts, headers });
  };
  return { ...built, tokens, inject };
}

export { MIGRATIONS };

/** A token-shaped string naming `tid`, with no valid signature (for tests of the guard's order). */
export function unsignedToken(tid: string): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'EdDSA', kid: 'none' })}.${part({ tid, sub: 'x' })}.${part('sig')}`;
}

/** How placement sees nodes by lifecycle alone (no heartbeat ages): live ones take new copies,
 *  draining ones keep theirs. */
export const lifecycleView = (nodes: readonly NodeLiveness[]): PlacementNode[] =>
  nodes.map((n) => ({
    nodeId: n.node_id,
    zone: n.zone,
    eligible: n.lifecycle === 'live',
    routable: n.lifecycle === 'live' || n.lifecycle === 'draining',
    maxShards: n.max_shards,
  }));
