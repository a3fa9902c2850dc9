/** What the cache, counter and group handles need from the client: the live connection. */
import { FeatureUnsupportedError } from '../errors.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { has } from '../protocol/negotiation.js';

export interface ProjectionHost {
  /** The live connection, waiting through a reconnect (bounded by the request timeout). */
  connection(signal?: AbortSignal): Promise<BrokerConnection>;
  /** The live connection when there is one now (no wait, no await); else undefined. */
  live?(): BrokerConnection | undefined;
  readonly closed: boolean;
}

/** Throws FeatureUnsupportedError unless the broker advertised `bit`. */
export function requireFeature(bc: BrokerConnection, bit: number, name: string): void {
  if (!has(bc.negotiated.features, bit)) throw new FeatureUnsupportedError(name);
}

const UTF8 = new TextEncoder();

export function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? UTF8.encode(data) : data;
}
