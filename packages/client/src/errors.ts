/**
 * Typed errors of @felix/client. Answers from the broker map to one class per broker code
 * (`brokerCode`, with the retry class the broker sent); client-side failures have their own.
 */
import { FelixError, type FelixErrorOptions, type RetryClass, errorReason } from '@felix/common';
import { ConnectionClosedError, DialError, StreamResetError } from '@felix/transport';
import { defaultRetryFor, errorCodeName, retryClass } from '@felix/wire';

export abstract class ClientError extends FelixError {}

/** Wire retry class names (as @felix/wire reads them) on the shared RetryClass. */
const RETRY_OF_WIRE: Readonly<Record<string, RetryClass>> = {
  retry: 'retry',
  retry_after: 'retry_after_backoff',
  redirect: 'reconnect',
  outcome_unknown: 'unknown_outcome',
  fatal: 'never',
};

/** A wire retry class (name or byte) as a RetryClass; absent: the default of the broker code in
 *  @felix/wire's table. Anything unknown is fatal (protocol rule). */
export function retryFromWire(retry: string | number | undefined, brokerCode: string): RetryClass {
  const name = retryClass(retry ?? defaultRetryFor(brokerCode));
  return RETRY_OF_WIRE[name] ?? 'never';
}

/** Facts every broker refusal carries. */
export interface BrokerAnswer {
  brokerCode: string;
  message: string;
  retry?: string | number;
  detail?: unknown;
}

/** The broker refused a request; subclasses name the failure. */
export abstract class BrokerRefusedError extends ClientError {
  readonly brokerCode: string;
  readonly detail: unknown;
  constructor(answer: BrokerAnswer, options?: FelixErrorOptions) {
    // A class whose failure is fatal by nature passes `retry` itself; others obey the broker.
    const retry = options?.retry ?? retryFromWire(answer.retry, answer.brokerCode);
    super(answer.message, { ...options, retry });
    this.brokerCode = answer.brokerCode;
    this.detail = answer.detail;
  }
}

/** The `action` and `object` an authorization refusal names in its detail, when it does. */
function authzNames(detail: unknown): { action: string | undefined; object: string | undefined } {
  const d =
    typeof detail === 'object' && detail !== null ? (detail as Record<string, unknown>) : {};
  return {
    action: typeof d.action === 'string' ? d.action : undefined,
    object: typeof d.object === 'string' ? d.object : undefined,
  };
}

/**
 * The broker does not accept this connection's token (refused at `auth`, refused in a `reauth`,
 * or expired: a later request or a subscription ended at expiry). Fatal: the same call with the
 * same token fails the same way; a token provider's fresh token is what helps.
 */
export class UnauthenticatedError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_UNAUTHENTICATED';
  readonly action: string | undefined;
  readonly object: string | undefined;
  constructor(answer: BrokerAnswer, options?: FelixErrorOptions) {
    super(answer, { ...options, retry: 'never' });
    ({ action: this.action, object: this.object } = authzNames(answer.detail));
  }
}

/**
 * The token is valid but lacks the permission the call needs: `action` (`stream.publish`,
 * `cache.write`, ...) on `object` (`stream:t1/default/orders`), as the broker named them (absent
 * when it did not, as in a binary publish ack). Fatal and local to the call: the connection and
 * every other operation on it go on.
 */
export class ForbiddenError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_FORBIDDEN';
  readonly action: string | undefined;
  readonly object: string | undefined;
  constructor(answer: BrokerAnswer, options?: FelixErrorOptions) {
    super(answer, { ...options, retry: 'never' });
    ({ action: this.action, object: this.object } = authzNames(answer.detail));
  }
}
/** The stream, cache, group or key named is not there (UnknownStreamError is one). */
export class NotFoundError extends BrokerRefusedError {
  // Typed `string`: UnknownStreamError, a kind of this, keeps a code of its own.
  readonly code: string = 'FELIX_CLIENT_NOT_FOUND';
}
export class InvalidRequestError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_INVALID_REQUEST';
}
/**
 * The shard is led by another broker, which the answer names (node id, and its client address
 * and generation when the broker knows them). A client talking to a cluster follows it to the
 * owner (at most REDIRECT_HOPS_MAX hops); it reaches the caller only when that fails, or from a
 * broker that offers no cluster discovery.
 */
export class NotLeaderError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_NOT_LEADER';
}
export class ShardUnavailableError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_SHARD_UNAVAILABLE';
}
export class OverloadedError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_OVERLOADED';
}
export class LimitExceededError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_LIMIT_EXCEEDED';
}
export class DrainingError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_DRAINING';
}
export class BrokerInternalError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_BROKER_INTERNAL';
}
export class BrokerStorageError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_BROKER_STORAGE';
}
/** A quorum write no majority confirmed in time: it may still survive (outcome unknown). */
export class QuorumTimeoutError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_QUORUM_TIMEOUT';
}
/** The owner lost its leadership while the write waited: it may still survive. */
export class LeadershipLostError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_LEADERSHIP_LOST';
}
/** The broker could not confirm the write (its owner never answered): it may still survive. */
export class UnacknowledgedError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_UNACKNOWLEDGED';
}
/** A broker answer with a code this client does not know; it still obeys the retry class. */
export class BrokerUnknownCodeError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_BROKER_UNKNOWN_CODE';
}

/** A group settle named a claim that no longer stands (it lapsed, or the group was sought). */
export class StaleClaimError extends BrokerRefusedError {
  readonly code = 'FELIX_CLIENT_STALE_CLAIM';
}

const BY_CODE: Record<string, new (a: BrokerAnswer) => BrokerRefusedError> = {
  unauthenticated: UnauthenticatedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  invalid_request: InvalidRequestError,
  shard_unavailable: ShardUnavailableError,
  not_leader: NotLeaderError,
  overloaded: OverloadedError,
  limit_exceeded: LimitExceededError,
  draining: DrainingError,
  internal: BrokerInternalError,
  storage: BrokerStorageError,
  stale_claim: StaleClaimError,
  quorum_timeout: QuorumTimeoutError,
  leadership_lost: LeadershipLostError,
  unacknowledged: UnacknowledgedError,
};

/** Builds the typed error for a broker answer. */
export function brokerError(answer: BrokerAnswer): BrokerRefusedError {
  const Cls = BY_CODE[answer.brokerCode] ?? BrokerUnknownCodeError;
  return new Cls(answer);
}

/** The typed error of a JSON refusal (`error`, `publish_error`); `code` absent reads `unknown`. */
export function refusalOf(msg: {
  code?: string | undefined;
  message: string;
  retry?: string | number | undefined;
  detail?: unknown;
}): BrokerRefusedError {
  return brokerError({
    brokerCode: msg.code ?? 'unknown',
    message: msg.message,
    retry: msg.retry,
    detail: msg.detail,
  });
}

/** The typed error of a `not_leader` answer (FEATURE_REDIRECT): the owner it names travels in
 *  `detail` (`node_id`, `addr`, `generation`), as an `error` coded `not_leader` may carry it. */
export function notLeaderOf(msg: {
  node_id: string;
  addr?: string | undefined;
  generation?: number | undefined;
}): NotLeaderError {
  const where = msg.addr !== undefined ? ` (client address ${msg.addr})` : '';
  return new NotLeaderError({
    brokerCode: 'not_leader',
    message: `led by node ${msg.node_id}${where}`,
    retry: 'redirect',
    detail: { node_id: msg.node_id, addr: msg.addr, generation: msg.generation },
  });
}

/**
 * The typed error of a binary publish ack's refusal: its u16 code named by @felix/wire. The ack
 * carries no detail, so a `forbidden` one is given what the publish itself names: the action
 * `stream.publish` on `object` (`stream:T/N/S`, the stream it was sent to), when known.
 */
export function ackRefusalOf(
  ack: {
    code?: number | undefined;
    message?: string | undefined;
    retry?: string | number | undefined;
  },
  object?: string,
): BrokerRefusedError {
  const brokerCode = ack.code !== undefined ? errorCodeName(ack.code) : 'unknown';
  return brokerError({
    brokerCode,
    message: ack.message ?? '',
    ...(ack.retry !== undefined ? { retry: ack.retry } : {}),
    ...(brokerCode === 'forbidden' && object !== undefined
      ? { detail: { action: 'stream.publish', object } }
      : {}),
  });
}

/** A transport stream or its connection went away under a call (reset or closed): a loss to
 *  recover from by re-watching or re-polling, not a refusal. */
export function isStreamGone(err: unknown): boolean {
  return err instanceof StreamResetError || err instanceof ConnectionClosedError;
}

/** A subscribe cursor below the oldest retained offset. `available` is the oldest. */
export class CursorTooOldError extends ClientError {
  readonly code = 'FELIX_CLIENT_CURSOR_TOO_OLD';
  constructor(
    readonly requested: number,
    readonly available: number,
  ) {
    super(`offset ${requested} is below the oldest retained offset ${available}`);
  }
}

/** A subscribe cursor past the tail. `available` is the current tail. */
export class CursorInFutureError extends ClientError {
  readonly code = 'FELIX_CLIENT_CURSOR_IN_FUTURE';
  constructor(
    readonly requested: number,
    readonly available: number,
  ) {
    super(`offset ${requested} is past the tail ${available}`);
  }
}

/**
 * A write sent whose answer never came: an acked publish whose connection died before its ack
 * (it may or may not be in the log), or a write on a request stream (a cache put or delete, a
 * counter add, a group settle: ack, nack, extend, dead letter, redrive, discard; a group's seek
 * or delete) whose connection died after it was handed to the transport (`cause` the
 * ConnectionLostError; ClientClosedError when the client's close cut it off) or whose stream
 * went unanswered past requestTimeoutMs (`cause` a TimeoutError): it may or may not have been
 * applied. `what` names the stream or what the write went to (`cache users`, `counter hits`,
 * `group billing`). A write the loss caught before it was sent fails with ConnectionLostError
 * instead (ClientClosedError, cut off by the close): nothing was applied.
 */
export class OutcomeUnknownError extends ClientError {
  readonly code = 'FELIX_CLIENT_OUTCOME_UNKNOWN';
  constructor(what: string, options?: FelixErrorOptions) {
    const cause = options?.cause;
    super(
      cause instanceof TimeoutError
        ? `the write to ${what} was not answered in time (${cause.message}): it may ` +
            'or may not have been applied'
        : cause instanceof ClientClosedError
          ? `the client closed before the write to ${what} was answered: it may or may not ` +
            'have been applied'
          : cause instanceof Error && !(cause instanceof ConnectionLostError)
            ? `the request stream failed before the write to ${what} was answered ` +
              `(${cause.message}): it may or may not have been applied`
            : `the connection was lost before the write to ${what} was answered: it may or may ` +
              'not have been applied',
      { ...options, retry: 'unknown_outcome' },
    );
  }
}

/**
 * A request was redirected REDIRECT_HOPS_MAX times, or to a broker it had already tried: the
 * brokers disagree about the shard's owner (a move or failover in progress). `cause` is the last
 * refusal; retrying after a backoff (fresh owners) is safe, nothing was written.
 */
export class RedirectLimitError extends ClientError {
  readonly code = 'FELIX_CLIENT_REDIRECT_LIMIT';
  constructor(
    readonly tried: readonly string[],
    { owner, ...options }: FelixErrorOptions & { owner?: string } = {},
  ) {
    // A broker named twice in a row is one broker asked again (after a refusal): said once.
    const path = tried.filter((a, i) => i === 0 || a !== tried[i - 1]);
    const named =
      owner === undefined
        ? ''
        : `: the last answer named ${owner} as its owner, which is not reachable or not serving it yet (a failover under way ends this)`;
    super(`redirected past ${path.join(' -> ')} without reaching the shard's owner${named}`, {
      retry: 'retry_after_backoff',
      ...options,
    });
  }
}

/**
 * No connection could be made to any server. `learned`: the one server tried was a broker the
 * cluster named as a shard's owner, not one of the `servers` given (its loss, a failover under
 * way, is the likelier cause than a wrong address).
 */
export class ConnectError extends ClientError {
  readonly code = 'FELIX_CLIENT_CONNECT';
  readonly learned: boolean;
  constructor(servers: readonly string[], options?: FelixErrorOptions & { learned?: boolean }) {
    // The last server's reason, in one line: a wrong pin or CA is the commonest first mistake.
    const why = reasonOf(options?.cause);
    const whose = options?.learned === true ? ", the shard's owner as the cluster named it" : '';
    const { learned, ...rest } = options ?? {};
    super(`could not connect to ${servers.join(', ')}${whose}${why ? `: ${why}` : ''}`, {
      retry: 'retry_after_backoff',
      ...rest,
    });
    this.learned = learned === true;
  }
}

/** A failed dial or connect that the same options would meet on every retry: the broker
 *  refused the credentials (fatal by its class), or its certificate is not one the client was
 *  told to trust (no `tls` option against a self-signed broker, a wrong pin or CA). */
export function retryCannotHelp(err: unknown): boolean {
  if (err instanceof ClientError) return err.retry === 'never';
  return err instanceof DialError && err.certificate;
}

/** What the last server's failure says, on one line (the deepest cause that says something). */
function reasonOf(cause: unknown): string | undefined {
  const e = cause instanceof AggregateError ? cause.errors[cause.errors.length - 1] : cause;
  if (e === undefined || e === null) return undefined;
  // A dial error says it in words already (the fingerprint, the CA, a refused port).
  if (!(e instanceof DialError)) return errorReason(e);
  return e.certificate ? `${e.reason}; ${CERTIFICATE_HINT}` : e.reason;
}

const CERTIFICATE_HINT =
  "trust the broker with tls.fingerprint (its certificate's SHA-256, which a broker logs as " +
  'cert_fingerprint) or tls.ca (the CA that signed it)';

/** A call waited longer than its timeout (for a connection or an answer). */
export class TimeoutError extends ClientError {
  readonly code = 'FELIX_CLIENT_TIMEOUT';
  /** `cause`: what kept it from completing, when known (a reconnect's failure). */
  constructor(what: string, ms: number, retry: RetryClass = 'retry', cause?: unknown) {
    const why = cause instanceof Error ? ` (last: ${cause.message})` : '';
    super(`${what} did not complete within ${ms} ms${why}`, {
      retry,
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

/**
 * The broker answered a subscribe or a cache watch but the event stream it opens for it did not
 * come within its bound (a broker that crashed or misbehaved between the two, or a stream lost on
 * the way). Nothing was delivered from it; the reader subscribes again from its next offset, as
 * after a lost stream, and ends with this only when that keeps happening.
 */
export class EventStreamTimeoutError extends ClientError {
  readonly code = 'FELIX_CLIENT_EVENT_STREAM_TIMEOUT';
  constructor(
    what: string,
    readonly ms: number,
    /** What the broker's `subscribed` said (where it started, its history): the reader resumes
     *  from there, so the records after it are not skipped. Absent for a watch. */
    readonly answered?: {
      startOffset?: number | undefined;
      offsetsEpoch?: number | undefined;
      history?: { generation: number; start: number } | undefined;
      divergedAt?: number | undefined;
    },
  ) {
    super(`the event stream of ${what} did not open within ${ms} ms of its answer`, {
      retry: 'reconnect',
    });
  }
}

/**
 * The broker did not answer the opening of a subscription or a cache watch (the `auth_ok` of its
 * control stream, then `subscribed` or `cache_watch_started`) within requestTimeoutMs, on a
 * connection that stayed up (a broker whose handler stalled, or an answer lost on the way).
 * Nothing was delivered from it; the reader subscribes again, and ends with this only when that
 * keeps happening.
 */
export class SubscribeTimeoutError extends ClientError {
  readonly code = 'FELIX_CLIENT_SUBSCRIBE_TIMEOUT';
  constructor(
    what: string,
    readonly ms: number,
  ) {
    super(`the broker did not answer ${what} within ${ms} ms`, { retry: 'reconnect' });
  }
}

/** The caller's AbortSignal ended the call. */
export class AbortedError extends ClientError {
  readonly code = 'FELIX_CLIENT_ABORTED';
  constructor(what: string, options?: FelixErrorOptions) {
    super(`${what} was aborted`, options);
  }
}

/** A publisher's `send()` found PUBLISHER_UNACKED_RECORDS_MAX records unacknowledged: the caller
 *  kept sending after `send()` answered false instead of awaiting `ready()`. Nothing was queued. */
export class PublisherFullError extends ClientError {
  readonly code = 'FELIX_CLIENT_PUBLISHER_FULL';
  constructor(stream: string, limit: number) {
    super(
      `publisher for ${stream} holds ${limit} unacknowledged records; await ready() when send() answers false`,
      { retry: 'retry_after_backoff' },
    );
  }
}

/** The client was closed. */
export class ClientClosedError extends ClientError {
  readonly code = 'FELIX_CLIENT_CLOSED';
  constructor() {
    super('the client is closed');
  }
}

/** The broker sent something this client cannot parse or did not expect. */
export class ProtocolError extends ClientError {
  readonly code = 'FELIX_CLIENT_PROTOCOL';
  constructor(what: string, options?: FelixErrorOptions) {
    super(`protocol error: ${what}`, { retry: 'reconnect', ...options });
  }
}

/** Bad arguments to a client call (empty stream name, payload too large, ...). */
export class InvalidArgumentError extends ClientError {
  readonly code = 'FELIX_CLIENT_INVALID_ARGUMENT';
}

/** A payload, key or value that is neither a string nor a Uint8Array (a Buffer is one);
 *  `argument` names which, so a wrong key is not reported as wrong data. */
export function notBytes(data: unknown, argument = 'data'): InvalidArgumentError {
  const what = data === null ? 'null' : Array.isArray(data) ? 'an array' : typeof data;
  return new InvalidArgumentError(
    `${argument} must be a string or a Uint8Array (a Buffer is one), got ${what}`,
  );
}

/**
 * The stream is not in the broker's catalog (it answered zero shards). A NotFoundError, so one
 * `catch` takes a mistyped stream name whichever call met it first; its message names the
 * stream as the broker's own `not_found` does (`stream default/oders not found`), so a typo
 * reads the same whichever call met it.
 */
export class UnknownStreamError extends NotFoundError {
  override readonly code: string = 'FELIX_CLIENT_UNKNOWN_STREAM';
  constructor(stream: string, namespace?: string) {
    const name = namespace === undefined ? stream : `${namespace}/${stream}`;
    super(
      { brokerCode: 'not_found', message: `stream ${name} not found` },
      { retry: 'retry_after_backoff' },
    );
  }
}

/**
 * The connection to the broker was lost; the call may be retried once reconnected. A read, a
 * subscription, a poll, or a write the loss caught before it was sent (nothing was applied); a
 * write sent before the loss fails with OutcomeUnknownError instead (its `cause` this).
 */
export class ConnectionLostError extends ClientError {
  readonly code = 'FELIX_CLIENT_CONNECTION_LOST';
  constructor(server: string, options?: FelixErrorOptions) {
    super(`the connection to ${server} was lost`, { retry: 'reconnect', ...options });
  }
}

/** A lost connection's message with what its cause says, for the `disconnected` status:
 *  `the connection to quic://… was lost: peer gone: nothing listens on UDP port 7000 …`. */
export function lossReason(err: Error): string {
  const c = err.cause as { reason?: unknown; message?: unknown } | undefined;
  const said =
    typeof c?.reason === 'string' ? c.reason : typeof c?.message === 'string' ? c.message : '';
  return said === '' ? err.message : `${err.message}: ${said.split('\n')[0]}`;
}

/**
 * The connection already has as many streams open as the broker allows one connection (each
 * subscription shard, cache watch and group poll holds one, besides the request stream): nothing
 * was sent, and the connection and its other streams go on. Closing one of them frees a slot,
 * hence `retry_after_backoff`; to hold more at once, use more clients (connections).
 */
export class StreamLimitExceededError extends ClientError {
  readonly code = 'FELIX_CLIENT_STREAM_LIMIT';
  constructor(
    server: string,
    readonly limit: number,
    options?: FelixErrorOptions,
  ) {
    super(
      `the connection to ${server} has ${limit} streams open, the most one connection may: close a subscription, watch or group poller, or use another client`,
      { retry: 'retry_after_backoff', ...options },
    );
  }
}

/** The broker did not advertise the feature a call needs (an older or in-memory broker). */
export class FeatureUnsupportedError extends ClientError {
  readonly code = 'FELIX_CLIENT_FEATURE_UNSUPPORTED';
  constructor(readonly feature: string) {
    super(`the broker does not offer ${feature}`);
  }
}

/** A token that is not a JWT the client can read the times of (`iat`, `exp`); it is not verified,
 *  only read to schedule its refresh. */
export class InvalidTokenError extends ClientError {
  readonly code = 'FELIX_CLIENT_INVALID_TOKEN';
  constructor(reason: string) {
    super(`invalid token: ${reason}`);
  }
}

/** The token provider threw, answered something other than a non-empty string, or did not
 *  answer within TOKEN_PROVIDER_TIMEOUT_MS. The client tries again after a backoff. */
export class TokenProviderError extends ClientError {
  readonly code = 'FELIX_CLIENT_TOKEN_PROVIDER';
  constructor(reason: string, options?: FelixErrorOptions) {
    super(`the token provider failed: ${reason}`, { retry: 'retry_after_backoff', ...options });
  }
}
