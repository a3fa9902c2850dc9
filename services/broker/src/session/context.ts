/** What a client session needs from the broker: config, handlers, metrics, logger, drain state. */
import type { Logger } from 'pino';
import type { Authenticator } from './authenticator.js';
import type { BrokerConfig } from '../config/types.js';
import type { BrokerMetrics } from '../metrics.js';
import type { Message } from '@felix/wire';
import type { HandlerTable } from './handler.js';
import type { NotLeaderRefusal, Refusal } from './refusal.js';

/** Control-plane mode: which shards this broker serves (cluster/shard-table.ts). */
export interface ShardOwnership {
  /** Null when this broker serves the shard; otherwise the refusal to answer with. A `write`
   *  is also refused while this broker's lease is lapsed; a write, or a request that
   *  `followsAssignment`, is refused as soon as the assignment names another leader. */
  refuse(
    kind: 'stream' | 'cache',
    tenant: string,
    namespace: string,
    name: string,
    shard: number,
    write?: boolean,
    followsAssignment?: boolean,
  ): Refusal | null;
  /** The same for a cache, counter, watch or group request (null when served or unknown). */
  refuseMessage(msg: Message): Refusal | null;
}

/**
 * Control-plane mode with an internal listener: writes to shards another broker leads are sent
 * there (cluster/forwarder.ts). Each method resolves with the owner's answer or throws the
 * Refusal to answer the client with. `order` is the client stream: its writes to one shard
 * reach the owner in request order.
 */
export interface Forwarding {
  publish(
    to: NotLeaderRefusal,
    payloads: Uint8Array[],
    token: string,
    order: object,
  ): Promise<{ first: number; last: number }>;
  /** A cache put, delete or counter add (`op` of @felix/wire's CACHE_OP); the owner's value. */
  cacheOp(
    to: NotLeaderRefusal,
    op: { op: number; key: string; ttlMs: number; value: Uint8Array },
    token: string,
    order: object,
  ): Promise<Uint8Array | undefined>;
}

/** Where handlers find the forwarder, set once the broker has joined its cluster. */
export interface ForwardingSlot {
  current: Forwarding | null;
}

export interface SessionContext {
  config: BrokerConfig;
  metrics: BrokerMetrics;
  log: Logger;
  draining(): boolean;
  /** Every request type this broker serves, registered by streams, caches, counters, groups. */
  handlers: HandlerTable;
  /** Verifies tokens (or, in dev mode, accepts them as given). */
  authenticator: Authenticator;
  /** Control-plane mode only: refuses shards this broker does not hold. */
  ownership?: ShardOwnership;
}
