/**
 * `ControlStore`: the control plane's state over one SQL driver, as one repository per resource
 * (tenants and namespaces, the stream and cache catalog, membership, assignments, replica
 * reports, feeds, and the auth state: signing keys, IdP issuers, RBAC, refresh tokens,
 * bootstrap) sharing one `Transactions`: every write is one transaction whose change rows are appended before
 * commit, and every stamp comes from the injected clock. This file only wires them together.
 */
import { type Clock, systemClock } from '../clock.js';
import { SNAPSHOT_ROWS_MAX } from '../limits.js';
import { AssignmentRepository } from './assignments.js';
import { BootstrapRepository } from './bootstrap.js';
import { CatalogRepository } from './catalog.js';
import { CACHES, type CachePatch, STREAMS, type StreamPatch } from './catalog-kinds.js';
import { FeedRepository } from './feeds.js';
import { MembershipRepository } from './membership.js';
import { IssuerRepository } from './issuers.js';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import { RbacRepository } from './rbac.js';
import { RefreshTokenRepository } from './refresh-tokens.js';
import { ReplicaReportRepository } from './replica-reports.js';
import { SigningKeyRepository } from './signing-keys.js';
import type { SqlDriver } from './sql.js';
import { NamespaceRepository, TenantRepository } from './tenants.js';
import { Transactions } from './transaction.js';
import type { Cache, FeedName, Stream } from './types.js';

export interface StoreOptions {
  changeRetentionRows: number;
  /** Snapshot rows returned at most; a larger catalog is refused rather than buffered. */
  snapshotRowsMax?: number;
  /** The clock every stored stamp comes from (default: the system clock; tests pass a fake). */
  clock?: Clock;
}

export class ControlStore {
  readonly driver: SqlDriver;
  readonly clock: Clock;
  readonly tenants: TenantRepository;
  readonly namespaces: NamespaceRepository;
  readonly streams: CatalogRepository<Stream, StreamPatch>;
  readonly caches: CatalogRepository<Cache, CachePatch>;
  readonly nodes: MembershipRepository;
  readonly replicaReports: ReplicaReportRepository;
  readonly assignments: AssignmentRepository;
  readonly feeds: FeedRepository;
  readonly signingKeys: SigningKeyRepository;
  readonly issuers: IssuerRepository;
  readonly rbac: RbacRepository;
  readonly refreshTokens: RefreshTokenRepository;
  readonly bootstrap: BootstrapRepository;
  private readonly tx: Transactions;

  constructor(driver: SqlDriver, opts: StoreOptions) {
    this.driver = driver;
    this.clock = opts.clock ?? systemClock;
    this.tx = new Transactions(driver, this.clock, opts.changeRetentionRows);
    this.assignments = new AssignmentRepository(this.tx, [STREAMS, CACHES]);
    this.streams = new CatalogRepository(this.tx, STREAMS, this.assignments);
    this.caches = new CatalogRepository(this.tx, CACHES, this.assignments);
    // A namespace's delete removes assignments first, then what they placed.
    this.namespaces = new NamespaceRepository(this.tx, [
      this.assignments,
      this.streams,
      this.caches,
    ]);
    this.tenants = new TenantRepository(this.tx, this.namespaces);
    this.nodes = new MembershipRepository(this.tx);
    this.replicaReports = new ReplicaReportRepository(this.tx);
    this.feeds = new FeedRepository(driver, opts.snapshotRowsMax ?? SNAPSHOT_ROWS_MAX);
    this.signingKeys = new SigningKeyRepository(this.tx);
    this.issuers = new IssuerRepository(this.tx);
    this.rbac = new RbacRepository(this.tx);
    this.refreshTokens = new RefreshTokenRepository(this.tx);
    this.bootstrap = new BootstrapRepository(this.tx);
  }

  get backend(): 'sqlite' | 'postgres' {
    return this.driver.kind;
  }

  /** Applies pending migrations (once across concurrent starts) and returns the versions applied. */
  migrate(): Promise<number[]> {
    return this.driver.migrate(MIGRATIONS, this.clock.nowMs());
  }

  /**
   * True when the store answers and holds at least this build's schema. A newer schema is fine
   * (migrations are additive, so roll forward); an older one means migrations have not run.
   */
  async schemaCurrent(): Promise<{ version: number; current: boolean }> {
    const version = await this.driver.schemaVersion();
    return { version, current: version >= SCHEMA_VERSION };
  }

  /** Subscribes to committed local writes (and, on Postgres, other instances' writes). */
  onChange(fn: (feeds: readonly FeedName[]) => void): () => void {
    return this.tx.onChange(fn);
  }

  /** Starts listening for other instances' commits (Postgres NOTIFY). */
  listenRemote(): Promise<void> {
    return this.tx.listenRemote();
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
