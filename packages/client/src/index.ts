export { FelixClient, connect } from './client.js';
export type {
  ConnectOptions,
  PublishOptions,
  PublishResult,
  ShardOffsets,
  SubscribeOptions,
  TokenProvider,
} from './types.js';
export {
  AbortedError,
  BrokerInternalError,
  BrokerRefusedError,
  BrokerStorageError,
  BrokerUnknownCodeError,
  ClientClosedError,
  ClientError,
  ConnectError,
  ConnectionLostError,
  CursorInFutureError,
  CursorTooOldError,
  DrainingError,
  EventStreamTimeoutError,
  ForbiddenError,
  InvalidArgumentError,
  InvalidRequestError,
  InvalidTokenError,
  LeadershipLostError,
  LimitExceededError,
  NotFoundError,
  OutcomeUnknownError,
  OverloadedError,
  ProtocolError,
  QuorumTimeoutError,
  PublisherFullError,
  NotLeaderError,
  RedirectLimitError,
  ShardUnavailableError,
  StreamLimitExceededError,
  SubscribeTimeoutError,
  TimeoutError,
  TokenProviderError,
  UnacknowledgedError,
  UnauthenticatedError,
  UnknownStreamError,
} from './errors.js';
export type { BrokerAnswer } from './errors.js';
export {
  CLUSTER_CONNECTIONS_MAX,
  CONNECT_TIMEOUT_MS_DEFAULT,
  EVENT_STREAM_REOPENS_MAX,
  EVENT_STREAM_WAIT_MS_MAX,
  FAILOVER_DEADLINE_MS_DEFAULT,
  REDIRECT_HOPS_MAX,
  TOPOLOGY_REFRESH_MS,
  FRAME_BYTES_MAX,
  IDLE_TIMEOUT_MS_DEFAULT,
  PUBLISHER_BATCH_BYTES_MAX_DEFAULT,
  PUBLISHER_BATCH_RECORDS_MAX_DEFAULT,
  PUBLISHER_PENDING_RECORDS_MAX,
  PUBLISHER_UNACKED_BYTES_HIGH,
  PUBLISHER_UNACKED_RECORDS_HIGH,
  PUBLISHER_UNACKED_RECORDS_MAX,
  RECONNECT_ATTEMPTS_MAX_DEFAULT,
  RECONNECT_BASE_MS_DEFAULT,
  RECONNECT_DELAY_MS_MAX_DEFAULT,
  REQUEST_TIMEOUT_MS_DEFAULT,
  STATUS_BUFFER_EVENTS_MAX,
  SUBSCRIBE_QUEUE_CAPACITY_DEFAULT,
  SUBSCRIBE_UNANSWERED_RETRIES_MAX,
  SUBSCRIPTION_BUFFER_BATCHES_DEFAULT,
  TOKEN_PROVIDER_TIMEOUT_MS,
  TOKEN_REFRESH_AT_LIFETIME_FRACTION,
  TOKEN_REFRESH_ATTEMPTS_MAX,
  TOKEN_REFRESH_DELAY_MS_MIN,
  TOKEN_REFRESH_RETRY_BASE_MS,
  TOKEN_REFRESH_RETRY_DELAY_MS_MAX,
} from './limits.js';
export type { TlsOptions } from './types.js';
export { Publisher } from './publisher.js';
export type { PublisherOptions } from './types.js';
export type { StatusEvent } from './status.js';
export { Subscription } from './subscription.js';
export type { StreamEvent } from './subscription.js';
export { backoffDelayMs } from './util/backoff.js';
export { BoundedQueue } from './util/bounded-queue.js';
export { Cache } from './projections/cache.js';
export type {
  CachePutOptions,
  CacheWatchEvent,
  CacheWatchOptions,
  WatchFilterSpec,
} from './projections/cache.js';
export { Counter } from './projections/counter.js';
export { Group, GroupMessage } from './projections/group.js';
export { StreamGroup, type ShardGroupInfo } from './projections/stream-group.js';
export type {
  DeadLetterPage,
  DeadLetterPageOptions,
  GroupAdminOptions,
  GroupInfo,
  GroupOptions,
  StreamGroupOptions,
  PollOptions,
} from './projections/group.js';
export { FeatureUnsupportedError, StaleClaimError } from './errors.js';
export { GROUP_POLL_RECORDS_DEFAULT, GROUP_POLL_WAIT_MS_DEFAULT } from './limits.js';
