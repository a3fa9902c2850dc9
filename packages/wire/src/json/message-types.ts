/**
 * The JSON messages of the client protocol (frames with flags 0) as a discriminated union on
 * `type`. Property names are the wire's own (snake_case) so a message reads the same in
 * code, in logs and in the reference. u64 offsets, ids and generations are numbers (safe
 * integers); producer ids and i64 counter values are bigints. Byte fields are Uint8Array
 * (base64 on the wire). An unrecognised `type` decodes to `UnknownMessage`.
 * One file past 500 lines on purpose: it is the catalogue of the protocol's messages, read
 * side by side with message-specs.ts, and splitting it would scatter that catalogue.
 */

export type AckMode = 'none' | 'per_message' | 'per_batch';
export type StartPosition = 'latest' | 'earliest' | { offset: number };
export type CursorErrorReason = 'too_old' | 'in_future';
export type ShardRouting = 'modulo' | 'jump_hash';
export type ShardKind = 'stream' | 'cache';
/** One of the `ERROR_CODE_*` names, or a code this version does not know. */
export type ErrorCodeName = string;
/** One of the `RETRY_*` names; an unknown class must be treated as `fatal`. */
export type RetryClassName = string;

export interface ErrorDetail {
  reason?: string;
  retry_after_ms?: number;
  /** On `forbidden`: the action refused (`stream.publish`, `cache.write`, ...). */
  action?: string;
  /** On `forbidden`: the object it was refused on (`stream:t1/ns/orders`). */
  object?: string;
  /** On `not_leader`: the node that leads the shard. */
  node_id?: string;
  /** On `not_leader`: the leader's client address (`host:port`), when the broker knows it. */
  addr?: string;
  /** On `not_leader`: the shard's generation the answering broker knows the leader at. */
  generation?: number;
}
export interface BrokerEndpoint {
  node_id: string;
  addr: string;
}
export interface ShardOwner {
  shard: number;
  node_id?: string;
  addr?: string;
  generation: number;
  unavailable?: string;
}
export interface GroupRecord {
  offset: number;
  payload: Uint8Array;
  /** 0 means the broker did not report it. */
  attempts: number;
  /** Omitted on the wire when 0. */
  skipped_before: number;
  publisher?: string;
  timestamp_micros?: number;
}
export type PublishRefusalReason =
  | 'unknown_producer'
  | 'sequence_expired'
  | 'sequence_reused'
  | { sequence_gap: { expected: number } }
  | { offset_mismatch: { tail: number } }
  | { not_leader: { node_id: string; addr?: string; generation?: number } };

interface StreamScope {
  tenant_id: string;
  namespace: string;
  stream: string;
}
interface CacheKeyScope {
  tenant_id: string;
  namespace: string;
  cache: string;
  key: string;
}
interface GroupScope extends StreamScope {
  shard: number;
  group: string;
}

export interface AuthMessage {
  type: 'auth';
  tenant_id: string;
  token: string;
  client_flags?: number;
  client_features?: number;
  client_features_hi?: number;
}
export interface AuthOkMessage {
  type: 'auth_ok';
  server_flags: number;
  server_features?: number;
  server_features_hi?: number;
  listener_ports?: number[];
  publish_window?: number;
}
export interface OkMessage {
  type: 'ok';
}
export interface ErrorMessage {
  type: 'error';
  message: string;
  code?: ErrorCodeName;
  retry?: RetryClassName;
  detail?: ErrorDetail;
}
export interface UnsupportedMessage {
  type: 'unsupported';
  request_type: string;
  extension?: string;
  request_id?: number;
}
export interface ExtensionMessage {
  type: 'extension';
  name: string;
  request_id?: number;
  /** Raw JSON body; omitted on the wire when undefined or null. */
  body?: unknown;
}
export interface NotLeaderMessage {
  type: 'not_leader';
  node_id: string;
  addr?: string;
  generation: number;
}
export interface TopologyMessage {
  type: 'topology';
}
export interface TopologyViewMessage {
  type: 'topology_view';
  brokers: BrokerEndpoint[];
}
export interface StreamShardsMessage extends StreamScope {
  type: 'stream_shards';
  request_id: number;
}
export interface StreamShardsViewMessage {
  type: 'stream_shards_view';
  shards: number;
  request_id: number;
  /** Absent means `modulo`. */
  routing?: ShardRouting;
}
/**
 * FEATURE_RECORD_TIMESTAMPS: the first offset of `shard` whose append time (µs since the epoch,
 * the leader's clock) is at or after `at_micros`, answered `offset_value`.
 */
export interface OffsetForTimeMessage extends StreamScope {
  type: 'offset_for_time';
  shard: number;
  at_micros: number;
  request_id: number;
}
/** The answer to `offset_for_time`; `offset` is absent when no record is that new yet. */
export interface OffsetValueMessage {
  type: 'offset_value';
  offset?: number;
  request_id: number;
}
export interface CacheShardsMessage {
  type: 'cache_shards';
  tenant_id: string;
  namespace: string;
  cache: string;
  request_id: number;
}
export interface CacheShardsViewMessage {
  type: 'cache_shards_view';
  shards: number;
  request_id: number;
}
export interface ShardOwnersMessage {
  type: 'shard_owners';
  tenant_id: string;
  namespace: string;
  name: string;
  kind: ShardKind;
  request_id: number;
}
export interface ShardOwnersViewMessage {
  type: 'shard_owners_view';
  owners: ShardOwner[];
  request_id: number;
}
export interface PublishMessage extends StreamScope {
  type: 'publish';
  payload: Uint8Array;
  key?: Uint8Array;
  request_id?: number;
  ack?: AckMode;
}
export interface PublishBatchMessage extends StreamScope {
  type: 'publish_batch';
  payloads: Uint8Array[];
  key?: Uint8Array;
  request_id?: number;
  ack?: AckMode;
}
export interface PublishOkMessage {
  type: 'publish_ok';
  request_id: number;
  offset?: number;
}
export interface PublishErrorMessage {
  type: 'publish_error';
  request_id: number;
  message: string;
  code?: ErrorCodeName;
  retry?: RetryClassName;
  detail?: ErrorDetail;
}
export interface ProducerInitMessage {
  type: 'producer_init';
  request_id: number;
}
export interface ProducerInitOkMessage {
  type: 'producer_init_ok';
  request_id: number;
  producer_id: bigint;
}
export interface PublishIdempotentMessage extends StreamScope {
  type: 'publish_idempotent';
  payloads: Uint8Array[];
  key?: Uint8Array;
  request_id: number;
  producer_id: bigint;
  sequence: number;
}
export interface PublishRefusedMessage {
  type: 'publish_refused';
  request_id: number;
  reason: PublishRefusalReason;
  message: string;
}
export interface SubscribeMessage extends StreamScope {
  type: 'subscribe';
  subscription_id?: number;
  start?: StartPosition;
  shard?: number;
  queue_capacity?: number;
  /**
   * Felix extension, a replicated shard's: the history the subscriber's cursor belongs to, as
   * its last `subscribed` named it (`generation`, `generation_start`). A broker whose log
   * parted from that history below the cursor (a `leader` shard's unshipped records were lost
   * in a failover and their offsets written again) starts at the parting point instead, and
   * says so with `diverged_at`.
   */
  history_generation?: number;
  history_start?: number;
}
export interface SubscribedMessage {
  type: 'subscribed';
  subscription_id: number;
  start_offset?: number;
  live_offset?: number;
  queue_capacity?: number;
  /**
   * Felix extension, an in-memory stream's only: the incarnation of the shard's offsets. It
   * changes when they begin again (the broker restarted, the shard moved), so a subscriber
   * resuming at an offset of the old incarnation knows it names other records now.
   */
  offsets_epoch?: number;
  /** Felix extension, a replicated shard's: the serving leader's generation, and the offset its
   *  records start at in this log (what a later `subscribe` names as its history). */
  generation?: number;
  generation_start?: number;
  /** Felix extension: the subscription starts here, below the offset asked for, because this
   *  log parted there from the history the subscriber named; the records it read from here up
   *  to its cursor are gone, and other records hold those offsets now. */
  diverged_at?: number;
}
export interface SubscribeCursorErrorMessage {
  type: 'subscribe_cursor_error';
  reason: CursorErrorReason;
  requested: number;
  available: number;
}
export interface EventStreamHelloMessage {
  type: 'event_stream_hello';
  subscription_id: number;
}
export interface ShardMovedMessage {
  type: 'shard_moved';
  subscription_id: number;
  resume_from?: number;
  node_id?: string;
  addr?: string;
  generation: number;
}
export interface SubscriptionLaggedMessage {
  type: 'subscription_lagged';
  subscription_id: number;
  resume_from: number;
}
export interface EventMessage extends StreamScope {
  type: 'event';
  payload: Uint8Array;
  offset?: number;
}
export interface EventBatchMessage extends StreamScope {
  type: 'event_batch';
  payloads: Uint8Array[];
  base_offset?: number;
}
export interface CachePutMessage extends CacheKeyScope {
  type: 'cache_put';
  value: Uint8Array;
  request_id?: number;
  /** Written as `null` when absent (no expiry). */
  ttl_ms?: number;
}
export interface CacheGetMessage extends CacheKeyScope {
  type: 'cache_get';
  request_id?: number;
}
export interface CacheDeleteMessage extends CacheKeyScope {
  type: 'cache_delete';
  request_id?: number;
}
export interface CacheValueMessage {
  type: 'cache_value';
  tenant_id?: string;
  namespace?: string;
  cache?: string;
  key: string;
  /** Written as `null` when absent (missing or expired). */
  value?: Uint8Array;
  request_id?: number;
  version?: number;
}
export interface CacheOkMessage {
  type: 'cache_ok';
  request_id: number;
}
export interface CacheWatchMessage {
  type: 'cache_watch';
  tenant_id: string;
  namespace: string;
  cache: string;
  key?: string;
  prefix?: string;
  shard?: number;
  from_offset?: number;
  /** Omitted on the wire when false. */
  retained: boolean;
  subscription_id?: number;
  /** Felix extension, with `from_offset`: the history that offset belongs to, as the last
   *  `cache_watch_started` named it. A broker whose cache log parted from it below the offset
   *  (a `leader` cache's failover) starts the watch over with a `resnapshot`. */
  history_generation?: number;
  history_start?: number;
}
export interface CacheWatchStartedMessage {
  type: 'cache_watch_started';
  subscription_id: number;
  resume_offset: number;
  resnapshot: boolean;
  retained_count?: number;
  /** Felix extension, a replicated cache's: the newest generation its log's records carry and
   *  where they start (what a later `cache_watch` names as its history). */
  generation?: number;
  generation_start?: number;
}
export interface CacheEventMessage {
  type: 'cache_event';
  key: string;
  /** Absent means the key was deleted. */
  value?: Uint8Array;
  offset: number;
  /** Absolute Unix ms; 0 means never. */
  expires_at_millis: number;
}
export interface CacheWatchLaggedMessage {
  type: 'cache_watch_lagged';
  resume_from: number;
}
export interface CounterAddMessage extends CacheKeyScope {
  type: 'counter_add';
  delta: bigint;
  request_id: number;
}
export interface CounterGetMessage extends CacheKeyScope {
  type: 'counter_get';
  request_id: number;
}
export interface CounterValueMessage {
  type: 'counter_value';
  /** Absent means never written (not zero). */
  value?: bigint;
  request_id: number;
}
export interface GroupPollMessage extends GroupScope {
  type: 'group_poll';
  max_records: number;
  wait_ms: number;
  request_id: number;
  consumer?: string;
  /** Omitted on the wire when false. */
  reclaim: boolean;
  visibility_ms?: number;
}
export interface GroupRecordsMessage {
  type: 'group_records';
  records: GroupRecord[];
  request_id: number;
}
export interface GroupAckMessage extends GroupScope {
  type: 'group_ack';
  offset: number;
  request_id: number;
  /** Names the delivery (the reference's optional field): refused `stale_claim` when another
   *  delivery's claim stands. */
  attempts?: number;
}
/**
 * Felix extension (FEATURE_HI_GROUP_ACK_BATCH): each offset acknowledged as one `group_ack`
 * would be, answered once with `group_acked` when every finished offset's position is durable.
 */
export interface GroupAckBatchMessage extends GroupScope {
  type: 'group_ack_batch';
  offsets: number[];
  request_id: number;
}
/** The answer to `group_ack_batch`: `stale` names the offsets whose claim no longer stood. */
export interface GroupAckedMessage {
  type: 'group_acked';
  stale: number[];
  request_id: number;
}
export interface GroupNackMessage extends GroupScope {
  type: 'group_nack';
  offset: number;
  request_id: number;
  delay_ms?: number;
  attempts?: number;
}
/**
 * Felix extension (FEATURE_HI_GROUP_NACK_BATCH): each offset handed back as one `group_nack`
 * naming it would be (`attempts[i]`, when given, names the delivery of `offsets[i]`; one
 * `delay_ms` for all), answered once with `group_nacked`.
 */
export interface GroupNackBatchMessage extends GroupScope {
  type: 'group_nack_batch';
  offsets: number[];
  request_id: number;
  delay_ms?: number;
  attempts?: number[];
  /**
   * FEATURE_HI_GROUP_RELEASE: the records were never given to the application (polled ahead,
   * then handed back by a loop that ended): their deliveries are not counted as attempts.
   */
  release?: boolean;
}
/**
 * The answer to `group_nack_batch`: `stale` names every offset not handed back (its claim no
 * longer stood); `superseded`, when present, the ones among them whose `attempts` named another
 * delivery than the standing claim's (what a single `group_nack` refuses as a fatal
 * `stale_claim`, where the others are retryable).
 */
export interface GroupNackedMessage {
  type: 'group_nacked';
  stale: number[];
  request_id: number;
  superseded?: number[];
}
/**
 * Felix extension (FEATURE_HI_REAUTH): a fresh token for the connection, sent on any
 * authenticated stream before the current one expires. It must name the same tenant and
 * principal; the broker answers `reauth_ok` and from then on checks requests and
 * subscriptions of every stream of the connection against the new token, or answers an
 * `error` (`unauthenticated`) and keeps the old token.
 */
export interface ReauthMessage {
  type: 'reauth';
  token: string;
  request_id: number;
}
/** The answer to `reauth`: the new token's expiry (unix milliseconds), when it has one. */
export interface ReauthOkMessage {
  type: 'reauth_ok';
  request_id: number;
  expires_at_ms?: number;
}
export interface GroupExtendMessage extends GroupScope {
  type: 'group_extend';
  offset: number;
  attempts: number;
  extend_ms: number;
  request_id: number;
}
export interface GroupExtendedMessage {
  type: 'group_extended';
  visible_ms: number;
  request_id: number;
}
export interface GroupDeadLetterMessage extends GroupScope {
  type: 'group_dead_letter';
  offset: number;
  request_id: number;
  /** Felix extension (an older broker ignores it): names the delivery, as on `group_nack`; a
   *  dead letter from a delivery whose record went out again is refused `stale_claim`. */
  attempts?: number;
}
export interface GroupDeadLettersMessage extends GroupScope {
  type: 'group_dead_letters';
  request_id: number;
  /** FEATURE_HI_GROUP_DEAD_LETTER_PAGES: list only offsets strictly above this one (the last
   *  offset of the page before). Absent: from the lowest. An older broker ignores it. */
  after?: number;
  /** FEATURE_HI_GROUP_DEAD_LETTER_PAGES: offsets the page holds at most, 1 up to the broker's
   *  bound (1,000). Absent: the bound. An older broker ignores it. */
  limit?: number;
}
export interface GroupDeadLetterListMessage {
  type: 'group_dead_letter_list';
  offsets: number[];
  request_id: number;
  /** FEATURE_HI_GROUP_DEAD_LETTER_PAGES: dead letters remain above the page's last offset.
   *  Omitted when false; an older broker never sends it. */
  more: boolean;
}
export interface GroupDiscardMessage extends GroupScope {
  type: 'group_discard';
  offset: number;
  request_id: number;
}
export interface GroupRedriveMessage extends GroupScope {
  type: 'group_redrive';
  offset: number;
  request_id: number;
}
export interface GroupSeekMessage extends GroupScope {
  type: 'group_seek';
  start: StartPosition;
  /** Omitted on the wire when false. */
  if_new: boolean;
  request_id: number;
}
export interface GroupPositionMessage {
  type: 'group_position';
  offset: number;
  moved: boolean;
  request_id: number;
}
export interface GroupDescribeMessage extends GroupScope {
  type: 'group_describe';
  request_id: number;
}
export interface GroupInfoMessage {
  type: 'group_info';
  committed?: number;
  tail: number;
  in_flight: number;
  owed: number;
  dead_letters: number;
  /** When an answered ack's cursor is durable: `onCommit` (fsynced before the answer) or
   *  `periodic` (written on the group's interval). Absent from older brokers. */
  cursor_fsync?: 'onCommit' | 'periodic';
  request_id: number;
}
export interface GroupDeleteMessage extends GroupScope {
  type: 'group_delete';
  request_id: number;
}
export interface GroupDeletedMessage {
  type: 'group_deleted';
  existed: boolean;
  request_id: number;
}

/** A message whose `type` this codec does not know; never encoded. */
export interface UnknownMessage {
  type: 'unknown';
  /** The `type` as it arrived. */
  request_type: string;
  /** The `request_id`, when it was a readable safe integer. */
  request_id?: number;
  raw: { [key: string]: unknown };
}

export type Message =
  | AuthMessage
  | AuthOkMessage
  | OkMessage
  | ErrorMessage
  | UnsupportedMessage
  | ExtensionMessage
  | NotLeaderMessage
  | TopologyMessage
  | TopologyViewMessage
  | StreamShardsMessage
  | StreamShardsViewMessage
  | OffsetForTimeMessage
  | OffsetValueMessage
  | CacheShardsMessage
  | CacheShardsViewMessage
  | ShardOwnersMessage
  | ShardOwnersViewMessage
  | PublishMessage
  | PublishBatchMessage
  | PublishOkMessage
  | PublishErrorMessage
  | ProducerInitMessage
  | ProducerInitOkMessage
  | PublishIdempotentMessage
  | PublishRefusedMessage
  | SubscribeMessage
  | SubscribedMessage
  | SubscribeCursorErrorMessage
  | EventStreamHelloMessage
  | ShardMovedMessage
  | SubscriptionLaggedMessage
  | EventMessage
  | EventBatchMessage
  | CachePutMessage
  | CacheGetMessage
  | CacheDeleteMessage
  | CacheValueMessage
  | CacheOkMessage
  | CacheWatchMessage
  | CacheWatchStartedMessage
  | CacheEventMessage
  | CacheWatchLaggedMessage
  | CounterAddMessage
  | CounterGetMessage
  | CounterValueMessage
  | GroupPollMessage
  | GroupRecordsMessage
  | GroupAckMessage
  | GroupAckBatchMessage
  | GroupAckedMessage
  | GroupNackMessage
  | GroupNackBatchMessage
  | GroupNackedMessage
  | ReauthMessage
  | ReauthOkMessage
  | GroupExtendMessage
  | GroupExtendedMessage
  | GroupDeadLetterMessage
  | GroupDeadLettersMessage
  | GroupDeadLetterListMessage
  | GroupDiscardMessage
  | GroupRedriveMessage
  | GroupSeekMessage
  | GroupPositionMessage
  | GroupDescribeMessage
  | GroupInfoMessage
  | GroupDeleteMessage
  | GroupDeletedMessage
  | UnknownMessage;

/** Every message type this codec encodes (all but `unknown`). */
export type KnownMessage = Exclude<Message, UnknownMessage>;
export type MessageType = KnownMessage['type'];
/** The message of one `type`, e.g. `MessageOf<'publish_ok'>`. */
export type MessageOf<T extends Message['type']> = Extract<Message, { type: T }>;
