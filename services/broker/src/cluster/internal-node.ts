/**
 * This broker's place on the cluster's internal network: its internal listener (when
 * `cluster.internal_bind` is set) serving a ReplicaServer over the broker's own data directory.
 * It accepts replication only for the stream shards whose replica set names this broker as a
 * follower (the shard table's assignments); anything else is refused `Unauthorized`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ReplicaServer } from '@felix/replication';
import type { TlsMaterial } from '@felix/transport';
import type { ShardRef } from '@felix/wire';
import type { BrokerConfig } from '../config/types.js';
import { ConfigInvalidCombinationError } from '../errors.js';
import { splitAddr } from './peer-links.js';
import { InternalListener } from './internal-listener.js';

export interface InternalNode {
  listener: InternalListener;
  replicas: ReplicaServer;
  /** The cluster certificate, or null when running unauthenticated. */
  material: { tls: TlsMaterial; ca: string } | null;
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
  /** A stream shard's assignment as this broker knows it, and whether it follows it there. */
  follows: (s: ShardRef) => { generation: number; follower: boolean } | undefined,
): Promise<InternalNode | null> {
  const bind = cfg.cluster.internal_bind;
  if (bind === null) return null;
  const at = splitAddr(bind);
  if (at === null)
    throw new ConfigInvalidCombinationError(['cluster.internal_bind'], `${bind} is not host:port`);
  const material = await clusterMaterial(cfg);
  // The same directories the broker's own stream logs use (streams/durable-store.ts), so a
  // follower promoted to leader opens what it replicated.
  const root = cfg.durable.data_dir === null ? null : join(cfg.durable.data_dir, 'streams');
  const replicas = new ReplicaServer({
    logOptions: (s: ShardRef) => ({
      root: root ?? '',
      segmentBytes: cfg.durable.segment_bytes,
      shard: { tenant: s.tenantId, namespace: s.namespace, stream: s.stream, shard: s.shard },
      fsync: 'onCommit',
    }),
    // Only shards whose replica set names this broker (and not as leader) are accepted.
    assignment: follows,
  });
  const listener = await InternalListener.start({
    host: at.host,
    port: at.port,
    transport: cfg.cluster.internal_transport,
    selfId,
    tls: material?.tls ?? clientTls,
    clusterCa: material?.ca ?? null,
    serve: (frame) => replicas.handleFrame(frame),
    log,
  });
  log.info({ port: listener.port, node_id: selfId, mtls: material !== null }, 'internal listener');
  return {
    listener,
    replicas,
    material,
    async close() {
      await listener.close();
      await replicas.close();
    },
  };
}
