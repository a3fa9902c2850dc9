/**
 * The field table of every JSON message: the order fields are written in (the reference's
 * declaration order, so encodings are byte-identical to its), each field's value kind, and
 * its presence rule. The codec in message-codec.ts is driven entirely by this table.
 */

/** How a field appears on the wire. */
export type Presence =
  | 'req' // always written; missing on decode is an error
  | 'opt' // omitted when undefined; absent on decode is undefined
  | 'null' // always written, `null` when undefined; absent or null decode to undefined
  | 'skip_false' // boolean omitted when false; absent decodes to false
  | 'skip_zero' // number omitted when 0; absent decodes to 0
  | 'default'; // always written; absent decodes to false / 0

export type Kind =
  | 'str'
  | 'u16'
  | 'u32'
  | 'u64'
  | 'u64_big'
  | 'i64'
  | 'bool'
  | 'bytes'
  | 'bytes_list'
  | 'u64_list'
  | 'u16_list'
  | 'u32_list'
  | 'start'
  | 'refusal'
  | 'raw'
  | { enum: readonly string[] }
  | { obj: FieldSpec[] }
  | { list: FieldSpec[] };

export type FieldSpec = readonly [name: string, kind: Kind, presence: Presence];

const ACK: Kind = { enum: ['none', 'per_message', 'per_batch'] };
const DETAIL: Kind = {
  obj: [
    ['reason', 'str', 'opt'],
    ['retry_after_ms', 'u64', 'opt'],
    ['action', 'str', 'opt'],
    ['object', 'str', 'opt'],
    // On `not_leader` (Felix): who leads the shard, where clients reach it, at which generation.
    ['node_id', 'str', 'opt'],
    ['addr', 'str', 'opt'],
    ['generation', 'u64', 'opt'],
  ],
};
const STREAM: FieldSpec[] = [
  ['tenant_id', 'str', 'req'],
  ['namespace', 'str', 'req'],
  ['stream', 'str', 'req'],
];
const CACHE_KEY: FieldSpec[] = [
  ['tenant_id', 'str', 'req'],
  ['namespace', 'str', 'req'],
  ['cache', 'str', 'req'],
  ['key', 'str', 'req'],
];
const GROUP: FieldSpec[] = [...STREAM, ['shard', 'u32', 'req'], ['group', 'str', 'req']];
const ERROR_TAIL: FieldSpec[] = [
  ['code', 'str', 'opt'],
  ['retry', 'str', 'opt'],
  ['detail', DETAIL, 'opt'],
];
const GROUP_RECORD: FieldSpec[] = [
  ['offset', 'u64', 'req'],
  ['payload', 'bytes', 'req'],
  ['attempts', 'u32', 'default'],
  ['skipped_before', 'u64', 'skip_zero'],
  ['publisher', 'str', 'opt'],
  ['timestamp_micros', 'u64', 'opt'],
];
const RID: FieldSpec = ['request_id', 'u64', 'req'];
const RID_OPT: FieldSpec = ['request_id', 'u64', 'opt'];

export const MESSAGE_SPECS: Record<string, FieldSpec[]> = {
  auth: [
    ['tenant_id', 'str', 'req'],
    ['token', 'str', 'req'],
    ['client_flags', 'u16', 'opt'],
    ['client_features', 'u32', 'opt'],
    ['client_features_hi', 'u32', 'opt'],
  ],
  auth_ok: [
    ['server_flags', 'u16', 'req'],
    ['server_features', 'u32', 'opt'],
    ['server_features_hi', 'u32', 'opt'],
    ['listener_ports', 'u16_list', 'opt'],
    ['publish_window', 'u32', 'opt'],
  ],
  ok: [],
  error: [['message', 'str', 'req'], ...ERROR_TAIL],
  unsupported: [['request_type', 'str', 'req'], ['extension', 'str', 'opt'], RID_OPT],
  extension: [['name', 'str', 'req'], RID_OPT, ['body', 'raw', 'opt']],
  not_leader: [
    ['node_id', 'str', 'req'],
    ['addr', 'str', 'opt'],
    ['generation', 'u64', 'req'],
  ],
  topology: [],
  topology_view: [
    [
      'brokers',
      {
        list: [
          ['node_id', 'str', 'req'],
          ['addr', 'str', 'req'],
        ],
      },
      'req',
    ],
  ],
  stream_shards: [...STREAM, RID],
  stream_shards_view: [
    ['shards', 'u32', 'req'],
    RID,
    ['routing', { enum: ['modulo', 'jump_hash'] }, 'opt'],
  ],
  offset_for_time: [...STREAM, ['shard', 'u32', 'req'], ['at_micros', 'u64', 'req'], RID],
  offset_value: [['offset', 'u64', 'opt'], RID],
  cache_shards: [
    ['tenant_id', 'str', 'req'],
    ['namespace', 'str', 'req'],
    ['cache', 'str', 'req'],
    RID,
  ],
  cache_shards_view: [['shards', 'u32', 'req'], RID],
  shard_owners: [
    ['tenant_id', 'str', 'req'],
    ['namespace', 'str', 'req'],
    ['name', 'str', 'req'],
    ['kind', { enum: ['stream', 'cache'] }, 'req'],
    RID,
  ],
  shard_owners_view: [
    [
      'owners',
      {
        list: [
          ['shard', 'u32', 'req'],
          ['node_id', 'str', 'opt'],
          ['addr', 'str', 'opt'],
          ['generation', 'u64', 'req'],
          ['unavailable', 'str', 'opt'],
        ],
      },
      'req',
    ],
    RID,
  ],
  publish: [
    ...STREAM,
    ['payload', 'bytes', 'req'],
    ['key', 'bytes', 'opt'],
    RID_OPT,
    ['ack', ACK, 'opt'],
  ],
  publish_batch: [
    ...STREAM,
    ['payloads', 'bytes_list', 'req'],
    ['key', 'bytes', 'opt'],
    RID_OPT,
    ['ack', ACK, 'opt'],
  ],
  publish_ok: [RID, ['offset', 'u64', 'opt']],
  publish_error: [RID, ['message', 'str', 'req'], ...ERROR_TAIL],
  producer_init: [RID],
  producer_init_ok: [RID, ['producer_id', 'u64_big', 'req']],
  publish_idempotent: [
    ...STREAM,
    ['payloads', 'bytes_list', 'req'],
    ['key', 'bytes', 'opt'],
    RID,
    ['producer_id', 'u64_big', 'req'],
    ['sequence', 'u64', 'req'],
  ],
  publish_refused: [RID, ['reason', 'refusal', 'req'], ['message', 'str', 'req']],
  subscribe: [
    ...STREAM,
    ['subscription_id', 'u64', 'opt'],
    ['start', 'start', 'opt'],
    ['shard', 'u32', 'opt'],
    ['queue_capacity', 'u32', 'opt'],
    ['history_generation', 'u64', 'opt'],
    ['history_start', 'u64', 'opt'],
  ],
  subscribed: [
    ['subscription_id', 'u64', 'req'],
    ['start_offset', 'u64', 'opt'],
    ['live_offset', 'u64', 'opt'],
    ['queue_capacity', 'u32', 'opt'],
    ['offsets_epoch', 'u64', 'opt'],
    ['generation', 'u64', 'opt'],
    ['generation_start', 'u64', 'opt'],
    ['diverged_at', 'u64', 'opt'],
  ],
  subscribe_cursor_error: [
    ['reason', { enum: ['too_old', 'in_future'] }, 'req'],
    ['requested', 'u64', 'req'],
    ['available', 'u64', 'req'],
  ],
  event_stream_hello: [['subscription_id', 'u64', 'req']],
  shard_moved: [
    ['subscription_id', 'u64', 'req'],
    ['resume_from', 'u64', 'opt'],
    ['node_id', 'str', 'opt'],
    ['addr', 'str', 'opt'],
    ['generation', 'u64', 'req'],
  ],
  subscription_lagged: [
    ['subscription_id', 'u64', 'req'],
    ['resume_from', 'u64', 'req'],
  ],
  event: [...STREAM, ['payload', 'bytes', 'req'], ['offset', 'u64', 'opt']],
  event_batch: [...STREAM, ['payloads', 'bytes_list', 'req'], ['base_offset', 'u64', 'opt']],
  cache_put: [...CACHE_KEY, ['value', 'bytes', 'req'], RID_OPT, ['ttl_ms', 'u64', 'null']],
  cache_get: [...CACHE_KEY, RID_OPT],
  cache_delete: [...CACHE_KEY, RID_OPT],
  cache_value: [
    ['tenant_id', 'str', 'opt'],
    ['namespace', 'str', 'opt'],
    ['cache', 'str', 'opt'],
    ['key', 'str', 'req'],
    ['value', 'bytes', 'null'],
    RID_OPT,
    ['version', 'u64', 'opt'],
  ],
  cache_ok: [RID],
  cache_watch: [
    ['tenant_id', 'str', 'req'],
    ['namespace', 'str', 'req'],
    ['cache', 'str', 'req'],
    ['key', 'str', 'opt'],
    ['prefix', 'str', 'opt'],
    ['shard', 'u32', 'opt'],
    ['from_offset', 'u64', 'opt'],
    ['retained', 'bool', 'skip_false'],
    ['subscription_id', 'u64', 'opt'],
    ['history_generation', 'u64', 'opt'],
    ['history_start', 'u64', 'opt'],
  ],
  cache_watch_started: [
    ['subscription_id', 'u64', 'req'],
    ['resume_offset', 'u64', 'req'],
    ['resnapshot', 'bool', 'default'],
    ['retained_count', 'u64', 'opt'],
    ['generation', 'u64', 'opt'],
    ['generation_start', 'u64', 'opt'],
  ],
  cache_event: [
    ['key', 'str', 'req'],
    ['value', 'bytes', 'opt'],
    ['offset', 'u64', 'req'],
    ['expires_at_millis', 'u64', 'default'],
  ],
  cache_watch_lagged: [['resume_from', 'u64', 'req']],
  counter_add: [...CACHE_KEY, ['delta', 'i64', 'req'], RID],
  counter_get: [...CACHE_KEY, RID],
  counter_value: [['value', 'i64', 'opt'], RID],
  group_poll: [
    ...GROUP,
    ['max_records', 'u32', 'req'],
    ['wait_ms', 'u64', 'default'],
    RID,
    ['consumer', 'str', 'opt'],
    ['reclaim', 'bool', 'skip_false'],
    ['visibility_ms', 'u64', 'opt'],
  ],
  group_records: [['records', { list: GROUP_RECORD }, 'req'], RID],
  group_ack: [...GROUP, ['offset', 'u64', 'req'], RID, ['attempts', 'u32', 'opt']],
  group_ack_batch: [...GROUP, ['offsets', 'u64_list', 'req'], RID],
  group_acked: [['stale', 'u64_list', 'req'], RID],
  group_nack: [
    ...GROUP,
    ['offset', 'u64', 'req'],
    RID,
    ['delay_ms', 'u64', 'opt'],
    ['attempts', 'u32', 'opt'],
  ],
  group_nack_batch: [
    ...GROUP,
    ['offsets', 'u64_list', 'req'],
    RID,
    ['delay_ms', 'u64', 'opt'],
    ['attempts', 'u32_list', 'opt'],
    ['release', 'bool', 'opt'],
  ],
  group_nacked: [['stale', 'u64_list', 'req'], RID, ['superseded', 'u64_list', 'opt']],
  group_extend: [
    ...GROUP,
    ['offset', 'u64', 'req'],
    ['attempts', 'u32', 'req'],
    ['extend_ms', 'u64', 'req'],
    RID,
  ],
  group_extended: [['visible_ms', 'u64', 'req'], RID],
  group_dead_letter: [...GROUP, ['offset', 'u64', 'req'], RID, ['attempts', 'u32', 'opt']],
  group_dead_letters: [...GROUP, RID, ['after', 'u64', 'opt'], ['limit', 'u32', 'opt']],
  group_dead_letter_list: [['offsets', 'u64_list', 'req'], RID, ['more', 'bool', 'skip_false']],
  group_discard: [...GROUP, ['offset', 'u64', 'req'], RID],
  group_redrive: [...GROUP, ['offset', 'u64', 'req'], RID],
  group_seek: [...GROUP, ['start', 'start', 'req'], ['if_new', 'bool', 'skip_false'], RID],
  group_position: [['offset', 'u64', 'req'], ['moved', 'bool', 'req'], RID],
  group_describe: [...GROUP, RID],
  group_info: [
    ['committed', 'u64', 'opt'],
    ['tail', 'u64', 'req'],
    ['in_flight', 'u64', 'req'],
    ['owed', 'u64', 'req'],
    ['dead_letters', 'u64', 'req'],
    // The group's cursor durability (absent from brokers before it was named here).
    ['cursor_fsync', { enum: ['onCommit', 'periodic'] }, 'opt'],
    RID,
  ],
  group_delete: [...GROUP, RID],
  group_deleted: [['existed', 'bool', 'req'], RID],
  reauth: [['token', 'str', 'req'], RID],
  reauth_ok: [RID, ['expires_at_ms', 'u64', 'opt']],
};

/** Every message `type` the codec knows, in table order. */
export const MESSAGE_TYPES: readonly string[] = Object.keys(MESSAGE_SPECS);
