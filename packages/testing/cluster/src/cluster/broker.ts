/**
 * One broker of the cluster: a real `services/broker/dist/main.js` process run with the flags of
 * services/broker/node-flags.json, on its own ports, data dir, certificate and fault files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@felix/testing-harness';
import { ProcessStartError } from '../errors.js';
import {
  BROKER_START_ATTEMPTS_MAX,
  HTTP_CALL_DEADLINE_MS,
  PROCESS_LISTEN_DEADLINE_MS,
  scaled,
} from '../limits.js';
import type { ClusterNode, NodeState } from '../types.js';
import type { NodeTls } from './pki.js';
import { ManagedProcess } from './process.js';
import { BROKER_MAIN, REPO } from './repo.js';

const NODE_FLAGS = (
  JSON.parse(readFileSync(join(REPO, 'services', 'broker', 'node-flags.json'), 'utf8')) as {
    flags: string[];
  }
).flags;
/** Extra node flags for every broker (say `--cpu-prof --cpu-prof-dir=/tmp/p`), for profiling a
 *  cluster bench: FELIX_CLUSTER_BROKER_NODE_ARGS, split on spaces. */
const EXTRA_NODE_FLAGS = (process.env.FELIX_CLUSTER_BROKER_NODE_ARGS ?? '')
  .split(' ')
  .filter((flag) => flag !== '');

export interface BrokerOptions {
  index: number;
  /** `<cluster dir>/n<i>` */
  dir: string;
  tls: NodeTls;
  /** The environment every start gets (control plane, token, settings, spec.env). */
  env: NodeJS.ProcessEnv;
  /** Run the internal (broker-to-broker) listener for replication, with this CA as the cluster
   *  CA (mutual TLS: the node's certificate names its id). */
  internalCaPath?: string;
  /** Run the internal listener with no cluster certificate at all (an outsider of the cluster,
   *  for the tests that it cannot join): no FELIX_INTERNAL_TLS_* variables. */
  internalUncertified?: boolean;
}

export class Broker implements ClusterNode {
  readonly index: number;
  readonly id: string;
  readonly dataDir: string;
  readonly logPath: string;
  readonly partitionFile: string;
  readonly storageFaultFile: string;
  port = 0;
  httpPort = 0;
  /** The internal listener's port (0 without one). */
  internalPort = 0;
  readonly proc: ManagedProcess;

  constructor(private readonly opts: BrokerOptions) {
    this.index = opts.index;
    this.id = `n${opts.index}`;
    this.dataDir = join(opts.dir, 'data');
    this.logPath = join(opts.dir, 'broker.log');
    this.partitionFile = join(opts.dir, 'partition');
    this.storageFaultFile = join(opts.dir, 'storage-faults');
    this.proc = new ManagedProcess(this.id, this.logPath);
  }

  get state(): NodeState {
    return this.proc.state;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  url(transport: 'quic' | 'tls' = 'quic'): string {
    return `${transport}://127.0.0.1:${this.port}`;
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  /**
   * The first start: fresh ports (from `allocate`), retried on fresh ones when the broker fails
   * to listen (a port taken between the pick and the bind).
   */
  async firstStart(allocate: () => Promise<number> = freePort): Promise<void> {
    let last: unknown;
    for (let attempt = 0; attempt < BROKER_START_ATTEMPTS_MAX; attempt++) {
      this.port = await allocate();
      this.httpPort = await allocate();
      if (this.opts.internalCaPath || this.opts.internalUncertified)
        this.internalPort = await allocate();
      try {
        await this.start();
        return;
      } catch (err) {
        if (!(err instanceof ProcessStartError)) throw err;
        last = err;
      }
    }
    throw last;
  }

  /** Starts on the broker's ports and data dir; resolves once it logs `listening`. `env` is
   *  added for this start only (a node run with other settings than its peers). */
  async start(env: NodeJS.ProcessEnv = {}): Promise<void> {
    await this.proc.start({
      args: [...NODE_FLAGS, ...EXTRA_NODE_FLAGS, BROKER_MAIN],
      cwd: REPO,
      readyMarker: '"msg":"listening"',
      deadlineMs: scaled(PROCESS_LISTEN_DEADLINE_MS),
      env: {
        // No FELIX_AUTH_MODE: a broker with a control plane verifies real tokens (the default).
        FELIX_AUTH_MODE: undefined,
        FELIX_AUTH_DEV_WITH_CONTROLPLANE: undefined,
        FELIX_BROKER_CONFIG: '',
        FELIX_BROKER_HOST: '127.0.0.1',
        FELIX_BROKER_PORT: String(this.port),
        FELIX_BROKER_HTTP_HOST: '127.0.0.1',
        FELIX_BROKER_HTTP_PORT: String(this.httpPort),
        FELIX_BROKER_TLS_CERT: this.opts.tls.certPath,
        FELIX_BROKER_TLS_KEY: this.opts.tls.keyPath,
        FELIX_BROKER_LOG_LEVEL: 'info',
        FELIX_DURABLE_STORAGE_DIR: this.dataDir,
        FELIX_NODE_ID: this.id,
        FELIX_TEST_PARTITION_FILE: this.partitionFile,
        FELIX_TEST_STORAGE_FAULT_FILE: this.storageFaultFile,
        ...(this.internalPort !== 0
          ? {
              FELIX_INTERNAL_BIND: `127.0.0.1:${this.internalPort}`,
              FELIX_NODE_ADVERTISE_ADDR: `127.0.0.1:${this.internalPort}`,
            }
          : {}),
        ...(this.opts.internalCaPath
          ? {
              FELIX_INTERNAL_TLS_CERT: this.opts.tls.certPath,
              FELIX_INTERNAL_TLS_KEY: this.opts.tls.keyPath,
              FELIX_INTERNAL_TLS_CA: this.opts.internalCaPath,
            }
          : {}),
        ...this.opts.env,
        ...env,
      },
    });
  }

  /** The broker's /metrics text. */
  async metrics(): Promise<string> {
    const res = await fetch(`${this.httpUrl}/metrics`, {
      signal: AbortSignal.timeout(scaled(HTTP_CALL_DEADLINE_MS)),
    });
    return res.text();
  }
}
