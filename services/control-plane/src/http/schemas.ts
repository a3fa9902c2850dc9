/** TypeBox schemas of every request and response body (they also feed the OpenAPI document). */
import { type StringOptions, type TSchema, Type } from '@sinclair/typebox';
import {
  ADDRESS_CHARS_MAX,
  CACHE_TTL_MS_MAX,
  CURSOR_CHARS_MAX,
  NAME_LENGTH_MAX,
  NODE_LABEL_CHARS_MAX,
  NODE_LABELS_MAX,
  PAGE_LIMIT_MAX,
  REPLICATION_FACTOR_MAX,
  REPLICA_REPORT_SHARDS_MAX,
  SHARDS_MAX,
} from '../limits.js';

// Names are checked by checkName() so the error carries FELIX_CONTROLPLANE_INVALID_NAME; the
// schema only bounds the length so absurd inputs stop early.
const Name = Type.String({ maxLength: NAME_LENGTH_MAX * 4 });

/** No C0 control character (U+0000-U+001F) and no DEL (U+007F): Postgres refuses NUL in text. */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001F\\u007F]*$';
/** Free text (display names, addresses, zones, labels): any printable character. */
export const PlainText = (options: StringOptions = {}) =>
  Type.String({ ...options, pattern: NO_CONTROL_CHARACTERS });
const DisplayName = PlainText({ maxLength: 256 });
const Consistency = Type.Union([Type.Literal('Leader'), Type.Literal('Quorum')]);
const Routing = Type.Union([Type.Literal('modulo'), Type.Literal('jump_hash')]);
const Lifecycle = Type.Union([
  Type.Literal('live'),
  Type.Literal('draining'),
  Type.Literal('down'),
  Type.Literal('left'),
]);
const Kind = Type.Union([Type.Literal('stream'), Type.Literal('cache')]);
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
/**
 * Every request body refuses fields it does not know (400 naming the field), so a typo such as
 * `durabel` is an error rather than a silently ignored option.
 */
const STRICT = { additionalProperties: false } as const;

export const ErrorBody = Type.Object(
  { code: Type.String(), message: Type.String(), request_id: Type.String() },
  { $id: 'ErrorBody', description: 'The one error body; `code` is listed in the catalogue' },
);

/** Adds the shared error responses to a route's success responses. */
export function responses(ok: Record<number, TSchema>): Record<string, TSchema> {
  return { ...ok, '4xx': Type.Ref('ErrorBody'), '5xx': Type.Ref('ErrorBody') };
}

export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
  cursor: Type.Optional(Type.String({ maxLength: CURSOR_CHARS_MAX })),
});

const paged = <T extends TSchema>(item: T) =>
  Type.Object({ items: Type.Array(item), next_cursor: Nullable(Type.String()) });

export const TenantParams = Type.Object({ tenant_id: Name });
/** `?force=true` deletes a tenant whose roles carry cluster or node permissions too. */
export const DeleteTenantQuery = Type.Object(
  { force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) },
  STRICT,
);
export const NamespaceParams = Type.Object({ tenant_id: Name, namespace: Name });
export const StreamParams = Type.Object({ tenant_id: Name, namespace: Name, stream: Name });
export const CacheParams = Type.Object({ tenant_id: Name, namespace: Name, cache: Name });
export const NodeParams = Type.Object({ node_id: Name });

export const Tenant = Type.Object({ tenant_id: Type.String(), display_name: Type.String() });
export const CreateTenant = Type.Object(
  {
    tenant_id: Name,
    display_name: Type.Optional(DisplayName),
  },
  STRICT,
);
export const TenantPage = paged(Tenant);

export const Namespace = Type.Object({
  tenant_id: Type.String(),
  namespace: Type.String(),
  display_name: Type.String(),
});
export const CreateNamespace = Type.Object(
  {
    namespace: Name,
    display_name: Type.Optional(DisplayName),
  },
  STRICT,
);
export const NamespacePage = paged(Namespace);

// One `type: [integer, null]` rather than anyOf: should type coercion ever be turned on, anyOf
// would let 0 coerce to null and slip past `minimum`.
const PositiveOrNull = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
});
const RetentionIn = Type.Object(
  {
    max_age_seconds: Type.Optional(PositiveOrNull),
    max_size_bytes: Type.Optional(PositiveOrNull),
  },
  STRICT,
);
const Retention = Type.Object({
  max_age_seconds: Nullable(Type.Integer()),
  max_size_bytes: Nullable(Type.Integer()),
});

export const Stream = Type.Object({
  tenant_id: Type.String(),
  namespace: Type.String(),
  stream: Type.String(),
  kind: Type.Literal('Stream'),
  shards: Type.Integer(),
  replication_factor: Type.Integer(),
  retention: Retention,
  consistency: Consistency,
  durable: Type.Boolean(),
  routing: Routing,
  uid: Type.String({ description: 'Assigned at creation; another after a delete and create.' }),
});
export const CreateStream = Type.Object(
  {
    stream: Name,
    kind: Type.Optional(Type.Literal('Stream')),
    shards: Type.Optional(Type.Integer({ minimum: 1, maximum: SHARDS_MAX })),
    replication_factor: Type.Optional(
      Type.Integer({ minimum: 1, maximum: REPLICATION_FACTOR_MAX }),
    ),
    retention: Type.Optional(Nullable(RetentionIn)),
    consistency: Type.Optional(Consistency),
    durable: Type.Optional(Type.Boolean()),
    routing: Type.Optional(Routing),
  },
  STRICT,
);
export const PatchStream = Type.Object(
  {
    retention: Type.Optional(Nullable(RetentionIn)),
    consistency: Type.Optional(Consistency),
    durable: Type.Optional(Type.Boolean()),
  },
  STRICT,
);
export const StreamPage = paged(Stream);

export const Cache = Type.Object({
  tenant_id: Type.String(),
  namespace: Type.String(),
  cache: Type.String(),
  display_name: Type.String(),
  shards: Type.Integer(),
  replication_factor: Type.Integer(),
  consistency: Consistency,
  default_ttl_ms: Nullable(
    Type.Integer({ description: 'The TTL of a put that names none (null: never expires)' }),
  ),
  uid: Type.String({ description: 'Assigned at creation; another after a delete and create.' }),
});
const DefaultTtlMs = Type.Integer({ minimum: 1, maximum: CACHE_TTL_MS_MAX });
export const CreateCache = Type.Object(
  {
    cache: Name,
    display_name: Type.Optional(DisplayName),
    shards: Type.Optional(Type.Integer({ minimum: 1, maximum: SHARDS_MAX })),
    replication_factor: Type.Optional(
      Type.Integer({ minimum: 1, maximum: REPLICATION_FACTOR_MAX }),
    ),
    consistency: Type.Optional(Consistency),
    default_ttl_ms: Type.Optional(DefaultTtlMs),
  },
  STRICT,
);
export const PatchCache = Type.Object(
  {
    display_name: Type.Optional(DisplayName),
    default_ttl_ms: Type.Optional(Nullable(DefaultTtlMs)),
  },
  { ...STRICT, minProperties: 1 },
);
export const CachePage = paged(Cache);

const Address = PlainText({ minLength: 1, maxLength: ADDRESS_CHARS_MAX });
// A Record's key schema is only a property pattern: `propertyNames` is what bounds the keys.
const LabelText = PlainText({ maxLength: NODE_LABEL_CHARS_MAX });
const Labels = Type.Record(Type.String(), LabelText, {
  maxProperties: NODE_LABELS_MAX,
  propertyNames: LabelText,
});
const Capacity = Type.Object({
  max_shards: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  weight: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
});

export const RegisterNode = Type.Object(
  {
    node_id: Name,
    advertise_addr: Address,
    client_addr: Type.Optional(Nullable(Address)),
    region: Type.Optional(PlainText({ maxLength: NAME_LENGTH_MAX })),
    zone: Type.Optional(Nullable(PlainText({ maxLength: NAME_LENGTH_MAX }))),
    labels: Type.Optional(Labels),
    capacity: Type.Optional(
      Type.Object(
        {
          max_shards: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
          weight: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
        },
        STRICT,
      ),
    ),
    incarnation: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    durable_storage: Type.Optional(Type.Boolean()),
    features: Type.Optional(Type.Array(PlainText({ maxLength: 64 }), { maxItems: 64 })),
  },
  STRICT,
);

export const Node = Type.Object({
  node_id: Type.String(),
  spec: Type.Object({
    advertise_addr: Type.String(),
    client_addr: Nullable(Type.String()),
    region: Type.String(),
    zone: Nullable(Type.String()),
    labels: Type.Record(Type.String(), Type.String()),
    capacity: Capacity,
    durable_storage: Type.Boolean(),
  }),
  status: Type.Object({
    lifecycle: Lifecycle,
    incarnation: Type.Integer(),
    last_heartbeat_at_ms: Type.Integer(),
    registered_at_ms: Type.Integer(),
  }),
});

export const NodePlacement = Type.Object({
  eligible: Type.Boolean(),
  routable: Type.Boolean(),
  heartbeat_age_ms: Type.Integer(),
  reasons: Type.Array(Type.String()),
});
export const NodeView = Type.Object({ node: Node, placement: NodePlacement });
export const NodePage = paged(NodeView);
export const NodeListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
  cursor: Type.Optional(Type.String({ maxLength: CURSOR_CHARS_MAX })),
  lifecycle: Type.Optional(Lifecycle),
});

export const Registered = Type.Object({
  node: Node,
  heartbeat_interval_ms: Type.Integer(),
  expiry_timeout_ms: Type.Integer(),
  fleet_features: Type.Array(Type.String()),
  control_plane_features: Type.Array(Type.String()),
});
export const Heartbeat = Type.Object(
  { incarnation: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) },
  STRICT,
);
export const HeartbeatReply = Type.Object({
  node_id: Type.String(),
  lifecycle: Lifecycle,
  heartbeat_interval_ms: Type.Integer(),
  expiry_timeout_ms: Type.Integer(),
  fleet_features: Type.Array(Type.String()),
  control_plane_features: Type.Array(Type.String()),
});

const Offset = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Generation = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const HaltReason = Type.Union([Type.Literal('diverged'), Type.Literal('needs_bootstrap')]);
const ReportKey = {
  tenant_id: Name,
  namespace: Name,
  kind: Kind,
  stream: Name,
  shard: Type.Integer({ minimum: 0, maximum: SHARDS_MAX - 1 }),
};
export const ShardReport = Type.Object(
  {
    ...ReportKey,
    generation: Generation,
    leader_offset: Offset,
    commit_offset: Type.Optional(Offset),
    replica_offsets: Type.Array(
      Type.Object({ node_id: Name, durable_offset: Offset }, { additionalProperties: false }),
      { maxItems: REPLICATION_FACTOR_MAX },
    ),
    halted: Type.Optional(
      Type.Array(
        Type.Object({ node_id: Name, reason: HaltReason }, { additionalProperties: false }),
        { maxItems: REPLICATION_FACTOR_MAX },
      ),
    ),
    rebuilt: Type.Optional(
      Type.Array(Type.Object({ node_id: Name, base: Offset }, { additionalProperties: false }), {
        maxItems: REPLICATION_FACTOR_MAX,
      }),
    ),
    drained: Type.Optional(Type.Boolean()),
    caught_up: Type.Optional(Type.Array(Name, { maxItems: REPLICATION_FACTOR_MAX })),
    in_sync: Type.Optional(Type.Array(Name, { maxItems: REPLICATION_FACTOR_MAX })),
    /** The creation id of the stream or cache (`replica_report_uid`). */
    uid: Type.Optional(Type.String({ maxLength: 64 })),
  },
  STRICT,
);
export const ReplicaStatus = Type.Object(
  {
    incarnation: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    /** The reporter's count of its reports this incarnation: an older one than stored is stale. */
    seq: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
    shards: Type.Array(ShardReport, { maxItems: REPLICA_REPORT_SHARDS_MAX }),
  },
  STRICT,
);
const ReportOutcome = Type.Union([
  Type.Literal('accepted'),
  Type.Literal('stale'),
  Type.Literal('not_leader'),
  Type.Literal('unassigned'),
  Type.Literal('future_generation'),
]);
const ShardOutcomes = Type.Array(
  Type.Object({
    tenant_id: Type.String(),
    namespace: Type.String(),
    kind: Kind,
    stream: Type.String(),
    shard: Type.Integer(),
    outcome: ReportOutcome,
  }),
);
/** A leadership the control plane asks the reporting leader to hand off to its preferred
 *  broker (cluster/rebalance.ts); brokers that do not know the field ignore it. */

export const ReplicaStatusRefused = Type.Object({
  code: Type.String(),
  message: Type.String(),
  request_id: Type.String(),
  /** Absent when the whole request was refused (an old incarnation, an unknown node). */
  shards: Type.Optional(ShardOutcomes),
});
export const StoredReport = Type.Object({
  tenant_id: Type.String(),
  namespace: Type.String(),
  kind: Kind,
  stream: Type.String(),
  shard: Type.Integer(),
  generation: Type.Integer(),
  leader: Type.String(),
  leader_offset: Type.Integer(),
  commit_offset: Type.Integer(),
  replica_offsets: Type.Array(
    Type.Object({ node_id: Type.String(), durable_offset: Type.Integer() }),
  ),
  halted: Type.Array(Type.Object({ node_id: Type.String(), reason: HaltReason })),
  drained: Type.Boolean(),
  caught_up: Type.Array(Type.String()),
  in_sync: Type.Array(Type.String()),
  reported_at_ms: Type.Integer(),
});
/** A leadership the control plane asks the reporting leader to hand off to its preferred
 *  broker (cluster/rebalance.ts); brokers that do not know the field ignore it. */
export const TransferAsked = Type.Composite([
  Type.Pick(StoredReport, ['tenant_id', 'namespace', 'kind', 'stream', 'shard', 'generation']),
  Type.Object({ to: Type.String() }),
]);
export const ReplicaStatusReply = Type.Object({
  shards: ShardOutcomes,
  transfers: Type.Optional(Type.Array(TransferAsked)),
});
export const ReportList = Type.Object({ items: Type.Array(StoredReport) });

export const Assignment = Type.Object({
  tenant_id: Type.String(),
  namespace: Type.String(),
  kind: Kind,
  stream: Type.String({ description: 'The stream or cache name' }),
  shard: Type.Integer(),
  leader: Type.String(),
  replicas: Type.Array(Type.String()),
  generation: Type.Integer(),
  state: Type.Literal('active'),
  routing: Type.Optional(Routing),
  floor_generation: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        "Present once an operator accepted the loss of the shard's leader: the generation the shard restarted at. A broker discards any copy of the shard from before it but floor_base's",
    }),
  ),
  floor_base: Type.Optional(
    Type.String({
      description:
        'The replica whose copy the restart continued (absent: the shard restarted empty)',
    }),
  ),
});
export const AssignmentPage = paged(Assignment);
export const AcceptedLoss = Type.Object({
  moved: Type.Array(Assignment, { description: 'Shards the lost node led, now led elsewhere' }),
  still_led: Type.Integer({
    description: 'Shards it still leads: its lease has not lapsed, or no node is eligible',
  }),
});
export const AssignmentQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
  cursor: Type.Optional(Type.String({ maxLength: CURSOR_CHARS_MAX })),
  leader: Type.Optional(Name),
});

export const Snapshot = (item: TSchema) =>
  Type.Object({ items: Type.Array(item), next_seq: Type.Integer() });
export const ChangesQuery = Type.Object({
  since: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  wait_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX })),
});
export const Changes = (field: 'item' | 'assignment', item: TSchema) =>
  Type.Object({
    items: Type.Array(
      Type.Object({
        seq: Type.Integer(),
        op: Type.String({ description: 'created|updated|deleted, or assigned|updated|unassigned' }),
        key: Type.Record(Type.String(), Type.Union([Type.String(), Type.Integer()])),
        [field]: Type.Optional(item),
      }),
    ),
    next_seq: Type.Integer(),
  });

export const PlanReply = Type.Object({
  shards: Type.Integer(),
  unchanged: Type.Integer(),
  items: Type.Array(
    Type.Object({
      tenant_id: Type.String(),
      namespace: Type.String(),
      kind: Kind,
      stream: Type.String(),
      shard: Type.Integer(),
      action: Type.Union([
        Type.Literal('place'),
        Type.Literal('change'),
        Type.Literal('unplaceable'),
      ]),
      leader: Type.Optional(Type.String()),
      replicas: Type.Optional(Type.Array(Type.String())),
      generation: Type.Optional(Type.Integer()),
    }),
  ),
});

export const Live = Type.Object({ status: Type.Literal('ok') });
export const Ready = Type.Object({ status: Type.Literal('ready'), schema_version: Type.Integer() });
export const Info = Type.Object({
  region_id: Type.String(),
  api_version: Type.String(),
  version: Type.String(),
  store: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
  schema_version: Type.Integer(),
  features: Type.Object({
    durable_storage: Type.Boolean(),
    tiered_storage: Type.Boolean(),
    bridges: Type.Boolean(),
  }),
});
