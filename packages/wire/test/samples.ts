// One or more sample values of every JSON message type, binary layout and modifier. Used by
// the round-trip tests and by scripts/generate-vectors.ts to write the package's vectors.
import type {
  EventBatch,
  GroupRecordsMessage,
  InternalMessage,
  Message,
  PublishAck,
  PublishBatch,
} from '../src/index.js';

const te = new TextEncoder();
const b = (s: string) => te.encode(s);
const S = { tenant_id: 't1', namespace: 'default', stream: 'orders' };
const C = { tenant_id: 't1', namespace: 'default', cache: 'sessions', key: 'user-1' };
const G = { ...S, shard: 0, group: 'billing' };

export const MESSAGE_SAMPLES: Message[] = [
  { type: 'auth', tenant_id: 't1', token: 'tok', client_flags: 0x7fff, client_features: 0x2000 },
  { type: 'auth_ok', server_flags: 0x7fff, server_features: 0x2800, publish_window: 256 },
  { type: 'ok' },
  {
    type: 'error',
    message: 'moving',
    code: 'shard_unavailable',
    retry: 'retry',
    detail: { reason: 'moving', retry_after_ms: 250 },
  },
  { type: 'unsupported', request_type: 'shard_inspect', request_id: 4 },
  { type: 'extension', name: 'x.example', request_id: 5, body: { a: [1, 'b', null] } },
  { type: 'not_leader', node_id: 'b2', addr: '10.0.0.2:7000', generation: 3 },
  { type: 'topology' },
  { type: 'topology_view', brokers: [{ node_id: 'b1', addr: '10.0.0.1:7000' }] },
  { type: 'stream_shards', ...S, request_id: 1 },
  { type: 'stream_shards_view', shards: 8, request_id: 1, routing: 'jump_hash' },
  { type: 'offset_for_time', ...S, shard: 2, at_micros: 1_700_000_000_000_000, request_id: 50 },
  { type: 'offset_value', offset: 42, request_id: 50 },
  { type: 'cache_shards', tenant_id: 't1', namespace: 'default', cache: 'sessions', request_id: 2 },
  { type: 'cache_shards_view', shards: 1, request_id: 2 },
  {
    type: 'shard_owners',
    tenant_id: 't1',
    namespace: 'default',
    name: 'orders',
    kind: 'stream',
    request_id: 3,
  },
  {
    type: 'shard_owners_view',
    owners: [
      { shard: 0, node_id: 'b1', addr: 'h:1', generation: 2 },
      { shard: 1, generation: 0, unavailable: 'not_assigned' },
    ],
    request_id: 3,
  },
  { type: 'publish', ...S, payload: b('hello'), key: b('k1'), request_id: 9, ack: 'per_message' },
  { type: 'publish_batch', ...S, payloads: [b('a'), b('b')], request_id: 10, ack: 'per_batch' },
  { type: 'publish_ok', request_id: 10, offset: 41 },
  {
    type: 'publish_error',
    request_id: 11,
    message: 'quota',
    code: 'overloaded',
    retry: 'retry_after',
    detail: { reason: 'tenant_quota' },
  },
  { type: 'producer_init', request_id: 12 },
  { type: 'producer_init_ok', request_id: 12, producer_id: 0xfedcba9876543210n },
  {
    type: 'publish_idempotent',
    ...S,
    payloads: [b('x')],
    request_id: 13,
    producer_id: 0xfedcba9876543210n,
    sequence: 0,
  },
  {
    type: 'publish_refused',
    request_id: 13,
    reason: { not_leader: { node_id: 'b3' } },
    message: 'not leader',
  },
  { type: 'subscribe', ...S, subscription_id: 7, start: 'earliest', shard: 1, queue_capacity: 64 },
  { type: 'subscribed', subscription_id: 7, start_offset: 0, live_offset: 120 },
  {
    type: 'subscribed',
    subscription_id: 8,
    start_offset: 3,
    live_offset: 9,
    offsets_epoch: 1_733_390_000_123,
  },
  { type: 'subscribe_cursor_error', reason: 'too_old', requested: 3, available: 100 },
  { type: 'event_stream_hello', subscription_id: 7 },
  {
    type: 'shard_moved',
    subscription_id: 7,
    resume_from: 121,
    node_id: 'b2',
    addr: 'h:2',
    generation: 4,
  },
  { type: 'subscription_lagged', subscription_id: 7, resume_from: 130 },
  { type: 'event', ...S, payload: b('evt'), offset: 5 },
  { type: 'event_batch', ...S, payloads: [b('e1'), b('e2')], base_offset: 6 },
  { type: 'cache_put', ...C, value: b('v'), request_id: 20, ttl_ms: 60000 },
  { type: 'cache_get', ...C, request_id: 21 },
  { type: 'cache_delete', ...C, request_id: 22 },
  { type: 'cache_value', ...C, value: b('v'), request_id: 21, version: 17 },
  { type: 'cache_ok', request_id: 20 },
  {
    type: 'cache_watch',
    tenant_id: 't1',
    namespace: 'default',
    cache: 'sessions',
    prefix: 'user-',
    shard: 0,
    retained: true,
  },
  {
    type: 'cache_watch_started',
    subscription_id: 8,
    resume_offset: 55,
    resnapshot: false,
    retained_count: 2,
  },
  { type: 'cache_event', key: 'user-1', value: b('v2'), offset: 56, expires_at_millis: 0 },
  { type: 'cache_watch_lagged', resume_from: 57 },
  { type: 'counter_add', ...C, delta: -5n, request_id: 23 },
  { type: 'counter_get', ...C, request_id: 24 },
  { type: 'counter_value', value: 9223372036854775807n, request_id: 24 },
  {
    type: 'group_poll',
    ...G,
    max_records: 100,
    wait_ms: 1000,
    request_id: 30,
    consumer: 'w1',
    reclaim: true,
    visibility_ms: 30000,
  },
  {
    type: 'group_records',
    records: [
      {
        offset: 3,
        payload: b('job'),
        attempts: 1,
        skipped_before: 2,
        publisher: 'svc',
        timestamp_micros: 1700000000000000,
      },
    ],
    request_id: 30,
  },
  { type: 'group_ack', ...G, offset: 3, request_id: 31 },
  { type: 'group_ack_batch', ...G, offsets: [3, 4, 7], request_id: 41 },
  { type: 'group_acked', stale: [7], request_id: 41 },
  { type: 'group_nack', ...G, offset: 3, request_id: 32, delay_ms: 500, attempts: 1 },
  {
    type: 'group_nack_batch',
    ...G,
    offsets: [3, 4, 7],
    request_id: 42,
    delay_ms: 500,
    attempts: [1, 2, 1],
  },
  { type: 'group_nack_batch', ...G, offsets: [5, 6], request_id: 43, release: true },
  { type: 'group_nacked', stale: [7, 9], request_id: 42, superseded: [9] },
  { type: 'group_extend', ...G, offset: 3, attempts: 1, extend_ms: 10000, request_id: 33 },
  { type: 'group_extended', visible_ms: 10000, request_id: 33 },
  { type: 'group_dead_letter', ...G, offset: 4, request_id: 34 },
  { type: 'group_dead_letter', ...G, offset: 4, request_id: 35, attempts: 2 },
  { type: 'group_dead_letters', ...G, request_id: 35 },
  { type: 'group_dead_letter_list', offsets: [4, 9], request_id: 35, more: false },
  { type: 'group_dead_letters', ...G, request_id: 36, after: 9, limit: 2 },
  { type: 'group_dead_letter_list', offsets: [11, 12], request_id: 36, more: true },
  { type: 'group_discard', ...G, offset: 4, request_id: 36 },
  { type: 'group_redrive', ...G, offset: 9, request_id: 37 },
  { type: 'group_seek', ...G, start: { offset: 50 }, if_new: true, request_id: 38 },
  { type: 'group_position', offset: 50, moved: true, request_id: 38 },
  { type: 'group_describe', ...G, request_id: 39 },
  {
    type: 'group_info',
    committed: 49,
    tail: 60,
    in_flight: 2,
    owed: 1,
    dead_letters: 2,
    cursor_fsync: 'periodic',
    request_id: 39,
  },
  { type: 'group_delete', ...G, request_id: 40 },
  { type: 'group_deleted', existed: true, request_id: 40 },
  { type: 'reauth', token: 'eyJhbGciOiJFZERTQSJ9.e30.c2ln', request_id: 41 },
  { type: 'reauth_ok', request_id: 41, expires_at_ms: 1_800_000_000_000 },
];

const SCOPE = { tenantId: 't1', namespace: 'default', stream: 'orders' };
const PAYLOADS = [b('first'), b('second')];

export const PUBLISH_BATCH_SAMPLES: Record<string, PublishBatch> = {
  bin_publish_batch: { ...SCOPE, payloads: PAYLOADS },
  bin_publish_batch_acked_per_message: {
    ...SCOPE,
    payloads: PAYLOADS,
    requestId: 21,
    ackMode: 'per_message',
  },
  bin_publish_batch_idempotent: {
    ...SCOPE,
    payloads: PAYLOADS,
    requestId: 22,
    ackMode: 'per_batch',
    producerId: 0x0123456789abcdefn,
    sequence: 5,
  },
  bin_publish_batch_idempotent_keyed: {
    ...SCOPE,
    payloads: PAYLOADS,
    requestId: 23,
    ackMode: 'per_batch',
    producerId: 7n,
    sequence: 6,
    key: b('cust-9'),
  },
  bin_publish_batch_binary_payload: {
    ...SCOPE,
    payloads: [Uint8Array.of(0, 255, 128)],
    key: b(''),
  },
};

export const PUBLISH_ACK_SAMPLES: Record<string, PublishAck> = {
  bin_publish_ack_offset: { status: 'ok', requestId: 21, message: '', offset: 1000 },
  bin_publish_ack_owner: {
    status: 'ok',
    requestId: 22,
    message: '',
    owner: { nodeId: 'b2', addr: '10.0.0.2:7000', generation: 3 },
  },
  bin_publish_ack_owner_unpublished_offset: {
    status: 'ok',
    requestId: 23,
    message: '',
    owner: { nodeId: 'b2', generation: 3 },
    offset: 7,
  },
  bin_publish_ack_code: { status: 'error', requestId: 24, message: 'forbidden', code: 2, retry: 5 },
  bin_publish_ack_code_detail: {
    status: 'error',
    requestId: 25,
    message: 'moving',
    code: 5,
    retry: 1,
    reason: 'moving',
    retryAfterMs: 200,
  },
};

export const EVENT_BATCH_SAMPLES: Record<string, EventBatch> = {
  bin_event_batch_shared: { payloads: PAYLOADS },
  bin_event_batch_shared_offsets: { baseOffset: 100, payloads: PAYLOADS },
  bin_event_batch_shared_skipped: { baseOffset: 100, skippedBefore: 1, payloads: PAYLOADS },
  bin_event_batch_shared_publisher: { publisher: 'svc-orders', payloads: PAYLOADS },
  bin_event_batch_shared_timestamps: {
    baseOffset: 102,
    timestampsMicros: [1700000000000000, 1700000000000001],
    payloads: PAYLOADS,
  },
  bin_event_batch_shared_all: {
    baseOffset: 104,
    skippedBefore: 3,
    publisher: 'svc',
    timestampsMicros: [5, 6],
    payloads: PAYLOADS,
  },
  bin_event_batch_legacy: { subscriptionId: 7, payloads: PAYLOADS },
  bin_event_batch_legacy_offsets: { subscriptionId: 7, baseOffset: 9, payloads: PAYLOADS },
};

/** Binary `group_records` answers (flag 0x8000): empty, one record, several with a redelivery. */
export const GROUP_RECORDS_SAMPLES: Record<string, GroupRecordsMessage> = {
  bin_group_records_empty: { type: 'group_records', records: [], request_id: 7 },
  bin_group_records: {
    type: 'group_records',
    records: [{ offset: 42, payload: b('hello'), attempts: 1, skipped_before: 0 }],
    request_id: 8,
  },
  bin_group_records_redelivered: {
    type: 'group_records',
    records: [
      { offset: 100, payload: new Uint8Array([0, 255, 7]), attempts: 3, skipped_before: 0 },
      { offset: 101, payload: new Uint8Array(0), attempts: 1, skipped_before: 0 },
      { offset: 2 ** 40, payload: b('x'), attempts: 1, skipped_before: 0 },
    ],
    request_id: 9,
  },
};

/** Binary cache frames (flag word 0x8001) as vector fields: each kind, a put with a ttl, a miss. */
const CACHE_SCOPE = { tenant_id: 't1', namespace: 'default', cache: 'users' };
export const CACHE_FRAME_SAMPLES: Record<string, Record<string, unknown>> = {
  bin_cache_get: { cache_kind: 'get', request_id: 1, ...CACHE_SCOPE, key: 'k1' },
  bin_cache_put: {
    cache_kind: 'put',
    request_id: 2,
    ...CACHE_SCOPE,
    key: 'k1',
    value_hex: '68656c6c6f',
  },
  bin_cache_put_ttl: {
    cache_kind: 'put',
    request_id: 3,
    ...CACHE_SCOPE,
    key: 'ключ',
    ttl_ms: 60000,
    value_hex: '00ff07',
  },
  bin_cache_value: { cache_kind: 'value', request_id: 1, value_hex: '68656c6c6f' },
  bin_cache_value_miss: { cache_kind: 'value', request_id: 4 },
  bin_cache_ok: { cache_kind: 'ok', request_id: 2 },
};

const GROUP_SCOPE = {
  tenant_id: 't1',
  namespace: 'default',
  stream: 'jobs',
  shard: 0,
  group: 'workers',
};
export const GROUP_FRAME_SAMPLES: Record<string, Record<string, unknown>> = {
  bin_group_poll: {
    group_kind: 'poll',
    request_id: 1,
    ...GROUP_SCOPE,
    max_records: 1,
    wait_ms: 5000,
    reclaim: false,
  },
  bin_group_poll_named: {
    group_kind: 'poll',
    request_id: 2,
    ...GROUP_SCOPE,
    max_records: 10,
    wait_ms: 0,
    reclaim: true,
    visibility_ms: 30000,
    consumer: 'worker-1',
  },
  bin_group_ack: { group_kind: 'ack', request_id: 3, ...GROUP_SCOPE, offsets: [41, 42] },
  bin_group_acked: { group_kind: 'acked', request_id: 3, stale: [] },
  bin_group_acked_stale: { group_kind: 'acked', request_id: 4, stale: [42] },
};

const SHARD = { tenantId: 't1', namespace: 'default', stream: 'orders', shard: 0, generation: 2 };
export const INTERNAL_MESSAGE_SAMPLES: Record<string, InternalMessage> = {
  internal_hello: { kind: 'Hello', correlationId: 1, nodeId: 'b1' },
  internal_hello_capable: {
    kind: 'HelloCapable',
    correlationId: 2,
    nodeId: 'b1',
    capabilities: 0x7fn,
  },
  internal_authorized_forward_publish: {
    kind: 'AuthorizedForwardPublish',
    correlationId: 3,
    shard: SHARD,
    ack: 2,
    payloads: PAYLOADS,
    credential: b('bearer'),
  },
  internal_forward_publish_ok: {
    kind: 'ForwardPublishOk',
    correlationId: 3,
    firstOffset: 10,
    lastOffset: 11,
  },
  internal_replicate_records: {
    kind: 'ReplicateRecords',
    correlationId: 4,
    shard: SHARD,
    firstOffset: 10,
    checksum: 0,
    payloads: PAYLOADS,
  },
  internal_replicate_error: {
    kind: 'ReplicateError',
    correlationId: 4,
    code: 8,
    expectedOffset: 9,
    detail: 'gap',
  },
  internal_fence: { kind: 'Fence', correlationId: 5, shard: SHARD, log: 1 },
  internal_fence_ok: {
    kind: 'FenceOk',
    correlationId: 5,
    logEnd: 12,
    commitOffset: 11,
    lastGeneration: 2,
  },
};
