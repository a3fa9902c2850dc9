/**
 * The one refusal every request handler answers with, returned or thrown (a thrown one is caught
 * where the request's answer is built). Its code and default retry class come from
 * @felix/wire's error-code table; `reason` labels the bad-input metric. How a refusal is written
 * (an `error`, a `publish_error` or a binary ack) is decided where the answer is encoded.
 */
import {
  type ErrorDetail,
  FEATURE_ERROR_CODES,
  type KnownErrorCodeName,
  type RetryName,
  defaultRetryFor,
  encodeMessage,
} from '@felix/wire';
import { BrokerError } from '../errors.js';
import type { Negotiated } from './negotiation.js';

/** A code name of wire's table: a refusal cannot carry a code the table does not hold. */
export type ErrorCodeName = KnownErrorCodeName;

export type { RetryName };

export interface RefusalOptions {
  /** End the stream after answering (its bytes can no longer be trusted). */
  fatalToStream?: boolean;
  /** A retry class other than the code's default (e.g. a stale claim that may not be retried). */
  retry?: RetryName;
  cause?: unknown;
  /** Structured detail sent with the code (a `forbidden` names its action and object). */
  detail?: ErrorDetail;
}

/** A request the broker answers with a wire error instead of doing it. */
export class Refusal extends BrokerError {
  readonly code = 'FELIX_BROKER_REQUEST_REFUSED';
  readonly fatalToStream: boolean;
  readonly wireRetry: RetryName;
  readonly detail: ErrorDetail | undefined;

  constructor(
    readonly wireCode: ErrorCodeName,
    message: string,
    readonly reason: string,
    options: RefusalOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.fatalToStream = options.fatalToStream ?? false;
    this.wireRetry = options.retry ?? defaultRetryFor(wireCode);
    this.detail = options.detail;
  }
}

/** A shard another broker leads, as a `not_leader` refusal names it. */
export interface ShardOwner {
  kind: 'stream' | 'cache';
  tenant: string;
  namespace: string;
  /** The stream or cache. */
  name: string;
  shard: number;
  /** The leader's node id and the generation this broker knows it at. */
  nodeId: string;
  generation: number;
  /** The leader's client address (`cluster.client_advertise_addr`), when the node book has it. */
  addr: string | undefined;
}

/**
 * `not_leader`: the shard is led by another broker. Its detail names the leader, its client
 * address and the generation (the client's redirect); a write is forwarded to `owner` instead
 * where the broker can (cluster/forwarder.ts).
 */
export class NotLeaderRefusal extends Refusal {
  constructor(
    readonly owner: ShardOwner,
    message: string,
  ) {
    super('not_leader', message, 'not_leader', {
      detail: {
        reason: 'not_leader',
        node_id: owner.nodeId,
        ...(owner.addr !== undefined ? { addr: owner.addr } : {}),
        generation: owner.generation,
      },
    });
  }
}

/** The `error` frame of a refusal: with its code and retry class when the client reads them. */
export function errorFrame(
  auth: Pick<Negotiated, 'features'> | null,
  refusal: Refusal,
): Uint8Array {
  const withCodes = auth !== null && (auth.features & FEATURE_ERROR_CODES) !== 0;
  return encodeMessage(
    withCodes
      ? {
          type: 'error',
          message: refusal.message,
          code: refusal.wireCode,
          retry: refusal.wireRetry,
          ...(refusal.detail !== undefined ? { detail: refusal.detail } : {}),
        }
      : { type: 'error', message: refusal.message },
  );
}

/** Refuses a request naming another tenant than the one its stream authenticated for. */
export function checkTenant(auth: Negotiated, tenant: string): void {
  if (tenant !== auth.tenant) throw wrongTenant(auth);
}

export function wrongTenant(auth: Negotiated): Refusal {
  return new Refusal('forbidden', `stream authenticated for tenant ${auth.tenant}`, 'wrong_tenant');
}

/** The broker is shutting down: retried elsewhere or later. */
export function drainingRefusal(): Refusal {
  return new Refusal('draining', 'broker is shutting down', 'draining');
}
