/**
 * This broker's place on the cluster's internal network: its internal listener (when
 * `cluster.internal_bind` is set) serving a ReplicaServer over the broker's own data directory,
 * each log of a shard where the broker keeps it as leader (streams, caches, counters, group
 * cursors, dead letters). It accepts a log only for the shards whose replica set names this
 * broker as a follower (the shard table's assignments; group state follows its stream shard,
 * counters their cache shard); a shard it knows and does not follow is refused `Unauthorized`,
 * one it knows no assignment of (yet) `StaleRoute`, which the leader resends. Forwarded writes go to
 * `forwards` (cluster/forward-server.ts) once the broker has joined its cluster; before that they
 * are answered `Unavailable`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import {
  REPLICA_LOGS,
  type ReplicaLogKind,
  ReplicaServer,
  type ShardOwnerKind,
} from '@felix/replication';
import {
  type Io,
  type LogOptions,
  PROJECTION_SEGMENT_BYTES_DEFAULT,
  type ProjectionKind,
  projectionRoot,
} from '@felix/storage';
import type { TlsMaterial } from '@felix/transport';
import { INTERNAL_CAPABILITY, type ShardRef } from '@felix/wire';
import type { BrokerConfig, StreamConfig } from '../config/types.js';
import { retentionOf } from '../streams/durable-store.js';
import { ConfigInvalidCombinationError } from '../errors.js';
import { type ForwardServer, isForwardKind, refuseForwardFrame } from './forward-server.js';
import { splitAddr } from './peer-links.js';
import { InternalListener } from './internal-listener.js';

export interface InternalNode {
  listener: InternalListener;
  replicas: ReplicaServer;
  /** The cluster certificate, or null when running unauthenticated. */
  material: { tls: TlsMaterial; ca: string } | null;
  /** Where forwarded writes are served (set when the broker joins its cluster). */
  forwards: ForwardServer | null;
  close(): Promise<void>;
}

/** The cluster certificate (cert, key, CA) the config names, or null when unauthenticated. */
export async function clusterMaterial(
  cfg: BrokerConfig,
): Promise<{ tls: TlsMaterial; ca: string } | null> {
  const c = cfg.cluster;
  if (c.internal_tls_cert === null || c.internal_tls_key === null || c.internal_tls_ca === null)
    return null;
  const [certPem, keyPem, ca] = await Promise.all([
    readFile(c.internal_tls_cert, 'utf8'),
    readFile(c.internal_tls_key, 'utf8'),
    readFile(c.internal_tls_ca, 'utf8'),
  ]);
  return { tls: { certPem, keyPem }, ca };
}

export async function startInternalNode(
  cfg: BrokerConfig,
  selfId: string,
  clientTls: TlsMaterial,
  log: Logger,
  /** A shard of `kind` as this broker knows it: its generation, and whether it follows it. */
  follows: (
    s: ShardRef,
    kind: ShardOwnerKind,
  ) => { generation: number; follower: boolean } | undefined,
  /** The catalog's stream of a shard (its retention and consistency), when known. */
  streamOf: (s: ShardRef) => StreamConfig | undefined = () => undefined,
  /** The file system follower logs go through: the storage fault seam in tests, as the
   *  leader's logs do (a slowed or failing disk slows or fails a follower too). */
  io?: Io,
): Promise<InternalNode | null> {
  const bind = cfg.cluster.internal_bind;
  if (bind === null) return null;
  const at = splitAddr(bind);
  if (at === null)
    throw new ConfigInvalidCombinationError(['cluster.internal_bind'], `${bind} is not host:port`);
  const material = await clusterMaterial(cfg);
  const replicas = new ReplicaServer({
    logOptions: (s, log) => followerLogOptions(cfg, s, log, streamOf(s), io),
    // As on the leader: a quorum stream's retention never deletes what a majority may not hold.
    retentionStopsAtCommit: (s, log) => log === 'stream' && streamOf(s)?.consistency === 'quorum',
    // As the follower's copy syncs (its stream's mode): on commit, the carried commit offset is
    // saved before each answer; otherwise at most once a second.
    commitSync: (s) => (streamOf(s)?.fsync ?? cfg.durable.fsync_mode) === 'onCommit',
    // Only shards whose replica set names this broker (and not as leader) are accepted; none
    // known (before the first snapshot, or once the shard is unassigned) is asked again later.
    assignment: (s, log) => follows(s, REPLICA_LOGS[log].owner),
  });
  const node: { forwards: ForwardServer | null } = { forwards: null };
  const listener = await InternalListener.start({
    host: at.host,
    port: at.port,
    transport: cfg.cluster.internal_transport,
    selfId,
    tls: material?.tls ?? clientTls,
    clusterCa: material?.ca ?? null,
    serve: async (frame) => {
      if (!isForwardKind(frame.kind)) return replicas.handleFrame(frame);
      const forwards = node.forwards;
      return forwards === null
        ? refuseForwardFrame(frame, 'this broker does not serve forwards yet')
        : forwards.handle(frame);
    },
    capabilities: ownCapabilities(cfg),
    log,
  });
  log.info({ port: listener.port, node_id: selfId, mtls: material !== null }, 'internal listener');
  return {
    listener,
    replicas,
    material,
    get forwards() {
      return node.forwards;
    },
    set forwards(f: ForwardServer | null) {
      node.forwards = f;
    },
    async close() {
      await listener.close();
      await replicas.close();
    },
  };
}

/**
 * The capability bits this broker states in its internal Hellos: SYNCS_BEFORE_ANSWER when its
 * copies of catalog streams (which take `durable.fsync_mode`, cluster/feed-items.ts) answer a
 * batch only once synced. A leader that syncs before its acks counts a follower without the bit
 * toward no quorum (cluster/replicator.ts).
 */
export function ownCapabilities(cfg: BrokerConfig): bigint {
  return cfg.durable.fsync_mode === 'onCommit' ? INTERNAL_CAPABILITY.SYNCS_BEFORE_ANSWER : 0n;
}

/** Where each projection log lives under the data directory (the broker's own stores). */
const PROJECTION_OF: Record<Exclude<ReplicaLogKind, 'stream'>, ProjectionKind> = {
  cache: 'caches',
  counters: 'counters',
  groupCursors: 'groups',
  deadLetters: 'dead-letters',
};

/**
 * The follower copy of a log sits where the broker keeps that log as leader (streams at
 * `<data_dir>/streams` as in streams/durable-store.ts, projections on their own roots as in
 * @felix/storage's projection stores), so a follower promoted to leader opens what it replicated.
 */
export function followerLogOptions(
  cfg: BrokerConfig,
  s: ShardRef,
  log: ReplicaLogKind,
  stream?: StreamConfig,
  /** The storage fault seam in tests; absent: the real file system. */
  io?: Io,
): LogOptions {
  const dataDir = cfg.durable.data_dir ?? '';
  const shard = { tenant: s.tenantId, namespace: s.namespace, stream: s.stream, shard: s.shard };
  if (log === 'stream') {
    // The stream's retention applies to every copy, or a follower's disk grows without bound.
    const retention = stream === undefined ? undefined : retentionOf(cfg, stream);
    // A follower's copy syncs as its stream does on the leader: under `periodic` it confirms
    // what it has written (a quorum is then a majority's page caches, synced within the
    // interval, as JetStream's R3 and Kafka's acks=all), under `onCommit` what it has synced.
    return {
      root: join(dataDir, 'streams'),
      segmentBytes: cfg.durable.segment_bytes,
      shard,
      fsync: stream?.fsync ?? cfg.durable.fsync_mode,
      flushIntervalMs: stream?.fsync_interval_ms ?? cfg.durable.fsync_interval_ms,
      ...(retention === undefined ? {} : { retention }),
      ...(io === undefined ? {} : { io }),
    };
  }
  return {
    root: projectionRoot(dataDir, PROJECTION_OF[log]),
    segmentBytes: PROJECTION_SEGMENT_BYTES_DEFAULT,
    shard,
    fsync: 'onCommit',
    ...(io === undefined ? {} : { io }),
  };
}
