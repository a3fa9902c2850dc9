/**
 * The harness's contract: what `startCluster` takes and the `Cluster` it answers. Workloads and
 * the campaign command are written against these types; cluster.ts implements them.
 */
import type { ConnectOptions, FelixClient } from '@felix/client';

export interface StreamSpec {
  name: string;
  shards: number;
  /** Durable (segment log on disk); default true. */
  durable?: boolean;
  /** Consumer groups' cursor durability on this stream; default `onCommit`. */
  groupCursor?: 'onCommit' | 'periodic';
  /** Copies of each shard (the leader included); default 1. Needs `replication` on the spec. */
  replicationFactor?: number;
  /** When a publish is acked and what readers see (docs/replication.md); default `leader`. */
  consistency?: 'leader' | 'quorum';
  /** Retention of each shard's log (whole sealed segments go past either bound); default none. */
  retention?: { maxSizeBytes?: number; maxAgeSeconds?: number };
}

export interface CacheSpec {
  name: string;
  /** Default true. */
  durable?: boolean;
  /** Shards of the cache; default the control plane's. */
  shards?: number;
  /** Copies of each shard (the leader included): its cache and counter logs ship to the
   *  followers; default 1. Needs `replication` on the spec. */
  replicationFactor?: number;
  /** When a write is acked and what readers see (docs/replication.md); default `leader`. */
  consistency?: 'leader' | 'quorum';
  /** The TTL of a put that names none; default none (such values never expire). */
  defaultTtlMs?: number;
}

export interface ClusterSpec {
  brokers: number;
  /** Default `sqlite` (a file in the cluster's dir); `postgres` uses a fresh schema of `test`. */
  controlPlane?: 'sqlite' | 'postgres';
  streams?: StreamSpec[];
  caches?: CacheSpec[];
  /** Added to every broker's environment. */
  env?: NodeJS.ProcessEnv;
  /** Brokers run their internal listener (mutual TLS with the cluster's CA) and replicate. */
  replication?: boolean;
  /** Added to the control plane's environment (e.g. its liveness timings). */
  controlPlaneEnv?: NodeJS.ProcessEnv;
  /** Where data, logs, certificates and fault files go; default a new temp dir. */
  dir?: string;
  /** Default `campaign` / `default`. */
  tenant?: string;
  namespace?: string;
  /** The transport clients use; default `quic`. */
  transport?: 'quic' | 'tls';
}

/** A broker: by index in `cluster.nodes` or by node id. */
export type NodeRef = number | string;

export type NodeState = 'running' | 'paused' | 'stopped';

export interface ClusterNode {
  readonly index: number;
  readonly id: string;
  readonly port: number;
  readonly httpPort: number;
  readonly dataDir: string;
  /** The broker's stdout and stderr, appended across restarts. */
  readonly logPath: string;
  readonly state: NodeState;
  /** The process id while running or paused. */
  readonly pid: number | undefined;
  url(transport?: 'quic' | 'tls'): string;
}

/** One fault the harness injected: what, on whom, when it started and when it took effect. */
export interface FaultRecord {
  fault:
    | 'kill'
    | 'stop'
    | 'start'
    | 'restart'
    | 'pause'
    | 'resume'
    | 'partition'
    | 'heal'
    | 'slow_fsync'
    | 'fail_fsync'
    | 'heal_fsync'
    | 'restart_controlplane';
  /** `n0`, `n1 | n2`, `n0 | controlplane`, `controlplane`, `all`. */
  target: string;
  params?: Record<string, number | string>;
  /** performance.now() when it began and when it took effect. */
  startedAt: number;
  doneAt: number;
}

export interface Cluster {
  readonly dir: string;
  readonly tenant: string;
  readonly namespace: string;
  readonly nodes: readonly ClusterNode[];
  readonly controlPlaneUrl: string;
  /** Client options for the cluster's tenant: every node's address, TLS pins, a token. */
  clientOptions(extra?: Partial<ConnectOptions>): ConnectOptions;
  connect(extra?: Partial<ConnectOptions>): Promise<FelixClient>;
  /** Resolves when every shard of every stream and cache is served by a running broker. */
  waitServed(deadlineMs?: number): Promise<void>;

  /** SIGKILL; resolves when the process is gone. */
  kill(node: NodeRef): Promise<void>;
  /** SIGTERM (then SIGKILL after a grace); resolves when the process is gone. */
  stop(node: NodeRef): Promise<void>;
  /** Starts a stopped or killed broker on its ports and data dir; resolves once it listens.
   *  `env` is added to its environment for this start only. */
  start(node: NodeRef, opts?: { env?: NodeJS.ProcessEnv }): Promise<void>;
  /** stop then start. */
  restart(node: NodeRef): Promise<void>;
  /** SIGSTOP / SIGCONT. */
  pause(node: NodeRef): Promise<void>;
  resume(node: NodeRef): Promise<void>;
  /** Cuts `a` from `b` both ways (fault files); `b` may be 'controlplane'. */
  partition(a: NodeRef, b: NodeRef | 'controlplane'): Promise<void>;
  /** Removes every partition. */
  heal(): Promise<void>;
  /** Every log fdatasync of `node` waits `ms` first. */
  slowFsync(node: NodeRef, ms: number): Promise<void>;
  /** Log fdatasyncs of `node` fail: every one (`always`) or the next one (`once`). */
  failFsync(node: NodeRef, mode: 'always' | 'once'): Promise<void>;
  /** Clears slow and failing fsyncs of `node`. */
  healFsync(node: NodeRef): Promise<void>;
  restartControlPlane(): Promise<void>;

  /** Every fault injected so far, in order. */
  readonly faults: readonly FaultRecord[];
  /** The last `lines` lines of every process's log, headed by its name. */
  logTails(lines?: number): Promise<string>;
  /** Stops every process; removes the dir unless `keep` (a failed test keeps it). */
  shutdown(opts?: { keep?: boolean }): Promise<void>;
}
