/**
 * Every bound the broker enforces, with why it was chosen. Values a deployment may tune are
 * defaults here and live in the config registry (config/registry.ts); the `_MAX` values are
 * hard ceilings the config validator refuses to exceed.
 */

/** Client listener port (QUIC on UDP, TLS on TCP share the number), as the reference. */
export const LISTEN_PORT_DEFAULT = 5000;
/** HTTP port for /live, /ready and /metrics. */
export const HTTP_PORT_DEFAULT = 8080;

/** Pre-auth frames above this are refused on the header alone (reference: 64 KiB). */
export const PREAUTH_FRAME_BYTES_DEFAULT = 64 * 1024;
/** Largest frame payload after auth: big enough for a 4 MiB read page plus headroom. */
export const FRAME_BYTES_DEFAULT = 16 * 1024 * 1024;
/** Ceiling on `max_frame_bytes`: a frame is buffered whole before decoding. */
export const FRAME_BYTES_MAX = 64 * 1024 * 1024;
/** A connection that authenticates no stream within this is closed (reference: 10 s). */
export const AUTH_TIMEOUT_MS_DEFAULT = 10_000;
/**
 * A stream holding one incomplete frame (header or body) longer than this is refused and ended:
 * a peer cannot pin up to `max_frame_bytes` per stream by never sending a frame's last byte.
 * Seconds, not milliseconds: a healthy 16 MiB frame arrives well within it on a slow link.
 */
export const PARTIAL_FRAME_DEADLINE_MS_DEFAULT = 5_000;
/** Ceiling on the partial-frame deadline. */
export const PARTIAL_FRAME_DEADLINE_MS_MAX = 600_000;

/** Unanswered publishes per stream before the broker stops reading it (reference: 256). */
export const PUBLISH_WINDOW_DEFAULT = 256;
/** Ceiling on the publish window: each held answer pins its batch in memory. */
export const PUBLISH_WINDOW_MAX = 65_536;
/** How long a `quorum` publish waits for a majority before `quorum_timeout` (reference: 5 s). */
export const PUBLISH_QUORUM_TIMEOUT_MS_DEFAULT = 5_000;
/** Ceiling on that wait: each waiting publish pins its batch (and its publish-window slot). */
export const PUBLISH_QUORUM_TIMEOUT_MS_MAX = 600_000;
/** Batches one `quorum` shard may hold waiting for a majority (their publishers answered or
 *  not); past it a publish is refused `overloaded` before it is appended, so followers that
 *  stop answering bound the leader's memory instead of growing it. */
export const QUORUM_WAITING_BATCHES_MAX = 65_536;
/** Records in one publish batch; bounds the offsets one batch may claim and the records one
 *  frame makes the broker build (the protocol's bound, shared with the client by @felix/wire). */
export { PUBLISH_BATCH_RECORDS_MAX } from '@felix/wire';

/** Per-subscriber queue of envelopes (one envelope = one published batch). */
export const SUBSCRIBER_QUEUE_BATCHES_DEFAULT = 1024;
/** Ceiling a client may ask for with `queue_capacity`. */
export const SUBSCRIBER_QUEUE_BATCHES_MAX = 65_536;
/** Subscriptions one connection may hold; each owns a queue and a writer. */
export const SUBSCRIPTIONS_PER_CONNECTION_MAX = 1024;
/** Client connections accepted at once; beyond it new connections are closed. */
export const CLIENT_CONNECTIONS_DEFAULT = 4096;

/** Records the in-memory ring of one shard keeps (in-memory streams: all there is). */
export const RING_RECORDS_DEFAULT = 65_536;
/** Bytes of payload the ring of one shard keeps before evicting its oldest batches. */
export const RING_BYTES_DEFAULT = 64 * 1024 * 1024;
/** Cleared slots a ring, answer pipe or similar head-indexed queue lets pile up before it
 *  compacts its array (a copy of the live part); small, as the live part is small too. */
export const RING_COMPACT_SLOTS_MIN = 64;
/** Ceiling on the ring record bound: rings live in the heap. */
export const RING_RECORDS_MAX = 16 * 1024 * 1024;

/** One history page read from disk for a subscriber: records and bytes (one page in memory). */
export const HISTORY_PAGE_RECORDS_MAX = 4096;
export const HISTORY_PAGE_BYTES_MAX = 4 * 1024 * 1024;

/** Shards one stream may declare. */
export const STREAM_SHARDS_MAX = 1024;
/** Streams one catalog may declare. */
export const CATALOG_STREAMS_MAX = 10_000;
/** Identifier bytes (tenant, namespace, stream): the wire carries them with a u16 length. */
export const IDENT_BYTES_MAX = 255;
/** Token bytes accepted in `auth`. */
export const TOKEN_BYTES_MAX = 8 * 1024;

/** SIGTERM drain: time allowed for in-flight acks and log close before exiting anyway. */
export const DRAIN_TIMEOUT_MS_DEFAULT = 10_000;
/** Default fsync interval of `periodic` streams (reference: 250 ms). */
export const FSYNC_INTERVAL_MS_DEFAULT = 250;
/** Default segment size (reference: 256 MiB). */
export const SEGMENT_BYTES_DEFAULT = 256 * 1024 * 1024;
/** Default retention check interval (reference: 60 s). */
export const RETENTION_CHECK_INTERVAL_MS_DEFAULT = 60_000;
/** YAML config file size read at startup. */
export const CONFIG_FILE_BYTES_MAX = 4 * 1024 * 1024;

// ---- caches, counters, watches and consumer groups (served over the wire) ----

/** Default per-watcher queue of cache changes; past it the watch is ended (lagged), never thinned. */
export const WATCH_QUEUE_CAPACITY_DEFAULT = 4096;
/** Ceiling on the watcher queue: each queued change pins its value in memory. */
export const WATCH_QUEUE_CAPACITY_MAX = 65_536;
/** Watches one connection may hold at once; each owns a queue and a uni stream. */
export const WATCHES_PER_CONNECTION_MAX = 1024;
/** Cache and counter keys, in UTF-8 bytes (the storage record carries a u16 length). */
export const CACHE_KEY_BYTES_MAX = 1024;
/**
 * Room left in a frame for everything of a `cache_value` or `cache_event` answer but its value:
 * the type and field names, the scope's names and a key of CACHE_KEY_BYTES_MAX bytes even when
 * JSON escapes each byte as six.
 */
export const CACHE_ANSWER_OVERHEAD_BYTES_MAX = 64 * 1024;
/**
 * Largest value a put may carry: one whose base64 in a JSON answer still fits a frame the client
 * accepts (16 MiB, FRAME_BYTES_DEFAULT), with CACHE_ANSWER_OVERHEAD_BYTES_MAX beside it. A
 * delete answers the removed value, and a watch sends it, in JSON whatever exchange the put came
 * by: a bigger value (a binary put can carry up to 16 MiB) was stored, and then its delete was
 * applied but answered with a frame the client refused, and every watch of it failed.
 */
export const CACHE_VALUE_BYTES_MAX =
  ((FRAME_BYTES_DEFAULT - CACHE_ANSWER_OVERHEAD_BYTES_MAX) / 4) * 3;
/** Largest TTL a put may carry: about a thousand years keeps expiry inside a safe integer. */
export const CACHE_TTL_MS_MAX = 2 ** 45;

/** Claim length when a poll names none (reference: 30 s). */
export const GROUP_VISIBILITY_MS_DEFAULT = 30_000;
/** Ceiling on a poll's, an extend's or a nack delay's length (12 h: a claim is not storage). */
export const GROUP_VISIBILITY_MS_MAX_DEFAULT = 12 * 60 * 60 * 1000;
/** Hard ceiling the config may raise the visibility maximum to (7 days). */
export const GROUP_VISIBILITY_MS_CEILING = 7 * 24 * 60 * 60 * 1000;
/** Deliveries of one record before it is recorded as a dead letter (reference: 5). */
export const GROUP_ATTEMPTS_MAX_DEFAULT = 5;
/** Unsettled records per group per shard before polls answer empty (reference: 10,000). */
export const GROUP_IN_FLIGHT_MAX_DEFAULT = 10_000;
/** Ceiling on the in-flight cap: each claim is a map entry and a timer deadline in memory. */
export const GROUP_IN_FLIGHT_CEILING = 1_000_000;
/** Records per poll answer (reference: 1,000). */
export const GROUP_POLL_RECORDS_MAX = 1000;
/** Payload bytes per poll answer (reference: ~4 MiB), well under the frame bound. */
export const GROUP_POLL_BYTES_MAX_DEFAULT = 4 * 1024 * 1024;
/** Ceiling on the poll byte budget: the answer is one JSON frame (base64 grows it by 4/3). */
export const GROUP_POLL_BYTES_CEILING = 8 * 1024 * 1024;
/** Longest long-poll `wait_ms` (reference: 30 s). */
export const GROUP_WAIT_MS_MAX_DEFAULT = 30_000;
/** A waiting poll re-checks its group at least this often (reference self-check: 100 ms). */
export const GROUP_WAIT_RECHECK_MS = 100;
/** Ceiling for `groups.wait_recheck_ms`: a slower self-check only delays lapses nobody woke. */
export const GROUP_WAIT_RECHECK_MS_MAX = 600_000;
/** Offsets one `group_ack_batch` may name (a poll hands out at most GROUP_POLL_RECORDS_MAX). */
export const GROUP_ACK_BATCH_OFFSETS_MAX = 1000;
/** Offsets one `group_nack_batch` may name (a consume loop hands back at most a poll's worth). */
export const GROUP_NACK_BATCH_OFFSETS_MAX = 1000;
/** Dead entries a group's claim-deadline heap may hold beyond twice its claims before a rebuild. */
export const GROUP_DEADLINE_HEAP_SLACK = 1024;
/** Smallest table of a group's offset maps and sets (claims, owed, done), in slots (a power of
 *  two; small, as an idle group keeps three). A table holds at most half its slots, so it grows
 *  with the records in flight, which `groups.max_in_flight` bounds, and shrinks below an eighth. */
export const OFFSET_TABLE_SLOTS_MIN = 8;
/** Group names, in UTF-8 bytes. */
export const GROUP_NAME_BYTES_MAX = 255;
/** Named consumers (`group_poll` `consumer`), in UTF-8 bytes (reference §5: 1–128). */
export const GROUP_CONSUMER_NAME_BYTES_MAX = 128;
/** Dead letters one `group_dead_letters` answer lists, lowest first (the store's own bound),
 *  and the most a page's `limit` may ask; the next page is asked with `after`. */
export const GROUP_DEAD_LETTER_LIST_MAX = 1000;
/** Dead letters a `group_delete` removes per write: each page of them is one append and one sync
 *  of the dead-letter log (the store's bound on one removal, DEAD_LETTER_LIST_MAX, caps it), not
 *  one each; a group of 10,000 costs ten. */
export const GROUP_DELETE_DEAD_LETTERS_PER_WRITE_MAX = 1000;
/** Groups held in memory per broker; beyond it polls for new groups are refused (limit). */
export const GROUPS_IN_MEMORY_MAX = 100_000;
/** A group's in-memory state idle this long with no claim standing is dropped (reference:
 *  10 min), unless it holds what a load from its cursor would not rebuild (owed attempts, acks
 *  above a gap). */
export const GROUP_IDLE_EVICT_MS = 10 * 60 * 1000;
/** A state idle this long is dropped even holding claims or what a load would not rebuild (a
 *  group whose consumers are gone for good: it would otherwise stay until the broker restarts,
 *  and such groups add up toward GROUPS_IN_MEMORY_MAX). Loaded again, it is as after a restart:
 *  records above the cursor come back, counted from attempt 1. */
export const GROUP_IDLE_EVICT_HOLDING_MS = 24 * 60 * 60 * 1000;
/** How often idle group states are looked for. */
export const GROUP_SWEEP_INTERVAL_MS = 60_000;
/** Bytes of ready publish answers coalesced into one stream write. */
export const ANSWER_WRITE_BYTES_MAX = 256 * 1024;
/** Bytes of queued event batches coalesced into one subscriber write. */
export const EVENT_WRITE_BYTES_MAX = 256 * 1024;
/** Default bytes of hot cache values the broker keeps in memory in front of each cache's log. */
export const CACHE_HOT_BYTES_DEFAULT = 64 * 1024 * 1024;
/** Ceiling on the hot-value bound (values are copies of what the log holds). */
export const CACHE_HOT_BYTES_MAX = 16 * 1024 * 1024 * 1024;
/**
 * Expired keys one cache expiry pass deletes at most, over every cache shard this broker leads:
 * a pass is a few appends, so a backlog of expiries cannot hold a shard's writer for long; the
 * rest go in the next passes. Within storage's own per-call bound (EXPIRY_DELETES_PER_PASS_MAX).
 */
export const CACHE_EXPIRY_DELETES_PER_PASS_MAX = 1024;
/**
 * Keys of in-memory caches one expiry pass looks at, over every in-memory shard (the next pass
 * goes on where it stopped). The pass is one synchronous loop, so this bounds how long it holds
 * the event loop: about 0.6 ms over a million-key map, where 262,144 took 15-22 ms. At the
 * default interval it goes round 65,536 keys a second.
 */
export const CACHE_MEMORY_EXPIRY_VISITS_PER_PASS_MAX = 65_536;
/** Default interval of the cache expiry pass: an expired key is deleted about this late. */
export const CACHE_EXPIRY_INTERVAL_MS_DEFAULT = 1_000;
/** Ceiling on the expiry interval (an hour: expiries that late are not expiries). */
export const CACHE_EXPIRY_INTERVAL_MS_MAX = 3_600_000;
/**
 * Keys whose write generation (or writes in flight) the hot-value map tracks before it forgets
 * them all at once.
 */
export const HOT_GENERATIONS_MAX = 1_000_000;
/** Connect + answer bound of one ordinary control-plane call (reference: 2 s connect, 5 s request). */
export const CONTROLPLANE_REQUEST_MS_MAX = 5_000;
/** A long poll may take its wait plus this before the broker gives up on the answer. */
export const CONTROLPLANE_POLL_SLACK_MS = 5_000;
/** Deregistering at SIGTERM waits at most this long, so an unreachable control plane cannot hold the exit. */
export const CONTROLPLANE_DEREGISTER_MS_MAX = 2_000;

/**
 * SIGTERM hand-off (docs/replication.md, "Hand-off on SIGTERM"): the whole of it (shipping until
 * followers are level, the final report, waiting for the control plane to move the shards) is
 * bounded by this and by half of `broker.drain_timeout_ms`, so the drain keeps time to close.
 */
export const HANDOFF_TIMEOUT_MS = 5_000;
/**
 * At the end of a drain each client connection's request streams are ended once answered
 * (session/stream-finish.ts); the broker waits this long at most (`broker.drain_peer_close_ms`)
 * for the client to close them (it has then read which requests were applied) before it closes
 * the connection anyway. A client answers within a round trip; one that never does costs this.
 */
export const DRAIN_PEER_CLOSE_MS_DEFAULT = 1_000;
/** How often the hand-off looks at the followers' cursors and at the shards it still leads. */
export const HANDOFF_POLL_MS = 20;
/**
 * A shard moved to its preferred broker at the control plane's request (cluster/transfers.ts):
 * its writes are refused while it ships until its target is level, and again while the control
 * plane moves it once it said so; past either the move is given up. It bounds a writer's pause
 * for a move to a few seconds, as the SIGTERM hand-off's HANDOFF_TIMEOUT_MS does.
 */
export const SHARD_TRANSFER_MS = 3_000;
/** Shards one broker moves to their preferred brokers at once (each refuses its writes). */
export const SHARD_TRANSFERS_MAX = 4;
/** A shard whose move did not happen is not tried again for this long (a follower that cannot
 *  be level would otherwise pause its writes at every report). */
export const SHARD_TRANSFER_RETRY_MS = 60_000;
/** Shards remembered as resting (SHARD_TRANSFER_RETRY_MS); the oldest goes past it. */
export const SHARD_TRANSFERS_RESTING_MAX = 4_096;
/**
 * A shard reported drained that did not move waits at most this long for the control plane to
 * accept a report that no longer says so before it takes writes again: longer than the window
 * in which the control plane believes a report with its default liveness (2 × 15 s + 5 s).
 */
export const SHARD_TRANSFER_RETRACT_MS = 40_000;
/** First retry delay after a failed feed or membership call; doubles per failure. */
export const CONTROLPLANE_RETRY_MS_MIN = 100;
/** Longest retry delay (reference: heartbeat retries capped near a fifth of the lease). */
export const CONTROLPLANE_RETRY_MS_MAX = 2_000;
/**
 * The share of the lease L a broker keeps from sending an accepted heartbeat (reference: 0.75 L,
 * ε = L/4): the control plane frees its shards only after L + margin (margin ≥ L/4), so the
 * broker has stopped writing at least L/2 before anyone else may start.
 */
export const LEASE_KEPT_FRACTION = 0.75;
/**
 * Shard reports per replica-status request (the control plane's REPLICA_REPORT_SHARDS_MAX): a
 * broker leading more splits them over several requests in the same interval.
 */
export const REPLICA_REPORT_SHARDS_MAX = 2_048;
/** How often the replica reporter looks whether the broker registered yet (it reports at once). */
export const REPLICA_REPORT_REGISTERED_POLL_MS = 100;

/**
 * The least time between a report sent early, because a follower came newly in sync, and the
 * report before it: nudges within it coalesce into one report, so a shard table of many shards
 * coming in sync at once costs a report per gap, not one per shard.
 */
export const REPLICA_REPORT_NUDGE_GAP_MS = 50;
/**
 * Default of `cluster.replica_lag_max_ms`, the lag window (docs/replication.md, "In-sync
 * followers"): a follower that held the leader's whole log within it counts as in sync, and a
 * `leader` stream's failover may promote it. Kafka's `replica.lag.time.max.ms` is 30 s against a
 * 45 s session; Felix's lease L is 15 s by default, so a third of Kafka's keeps the same
 * proportion and stays well under L + margin, after which a silent follower is marked down.
 */
export const REPLICA_LAG_MAX_MS_DEFAULT = 10_000;
/** Ceiling of the lag window: a follower behind for longer is never worth promoting. */
export const REPLICA_LAG_MAX_MS_MAX = 600_000;
/**
 * Consecutive shipping backoffs of one shard log to one follower (no answer, or asked to
 * resend) before that log counts as failing; the first failing log of a follower broker is
 * warned of, once for all its logs (cluster/failing-followers.ts). The waits double from 50 ms
 * to 2 s, so the eighth backoff comes after seven waits: about 5 s for a follower that refuses at once, about 20 s for a silent one (each
 * exchange also waits out its 2 s answer timeout). Past a restart's usual gap.
 */
export const REPLICATION_BACKOFFS_WARN_AFTER = 8;
/** After the first warning, one more every this many backoffs of the follower's oldest failing
 *  log: every 1 to 2 minutes (2 s waits, plus the answer timeout for a silent follower). */
export const REPLICATION_BACKOFFS_WARN_EVERY = 30;
/** Items one snapshot answer may carry before the broker refuses it (the stores page at 10,000). */
export const CONTROLPLANE_SNAPSHOT_ITEMS_MAX = 1_000_000;
/** Longest a broker started on an empty data dir waits for its replicated shards to move
 *  (cluster/fresh-storage.ts) before it registers anyway. */
export const FRESH_STORAGE_WAIT_MS_MAX = 120_000;
/** How long that broker waits once the control plane shows it down, for the failover passes. */
export const FRESH_STORAGE_DOWN_GRACE_MS = 5_000;
/** How often it looks again meanwhile. */
export const FRESH_STORAGE_POLL_MS = 250;
/** How often the node address book (`GET /v1/nodes`) is refreshed (reference sync interval: 2 s). */
export const NODE_BOOK_REFRESH_MS = 2_000;
/** Nodes read per address-book refresh (one page; the control plane's page ceiling). */
export const NODE_BOOK_NODES_MAX = 10_000;

// ---- request-edge memory budgets (bytes a client's requests may pin in the broker) ----

/**
 * Bytes one connection may hold in partially received frames over all its streams (a frame
 * held while its last bytes are on their way). Four full frames: a client sending large frames
 * on a few streams at once is served, one leaving a frame one byte short on many streams is not.
 */
export const CONNECTION_PARTIAL_FRAME_BYTES_DEFAULT = 4 * FRAME_BYTES_DEFAULT;
/**
 * Bytes one connection's complete requests may pin until answered (a publish batch until its
 * append is acknowledged, an answer until it is written); past it the broker stops reading
 * the connection's streams until answers drain. Four full frames, as the partial bound.
 */
export const CONNECTION_ANSWER_BYTES_DEFAULT = 4 * FRAME_BYTES_DEFAULT;
/**
 * Request bytes in flight over every connection (partial frames plus unanswered requests);
 * past it new request bytes are refused with `overloaded`. Eight connections at their budgets:
 * a broker that pins this much in requests is overloaded, not busy.
 */
export const INFLIGHT_REQUEST_BYTES_DEFAULT = 512 * 1024 * 1024;
/** Ceiling on the request-edge budgets (config validator): 64 GiB, beyond any one machine. */
export const REQUEST_BUDGET_BYTES_MAX = 64 * 1024 * 1024 * 1024;

/**
 * Default write interval of a `periodic` group cursor: acks answered within the last interval
 * may be redelivered after a crash (the streams' periodic default, the same window).
 */
export const GROUP_CURSOR_FSYNC_INTERVAL_MS_DEFAULT = 250;
/** Longest cursor write interval: a crash redelivers at most this much acknowledged work. */
export const GROUP_CURSOR_FSYNC_INTERVAL_MS_MAX = 60_000;

/** Bytes one subscriber may have queued (payload bytes plus each record's 4-byte length prefix,
 *  what the queued records occupy in the event frames they leave in): a stalled subscriber costs
 *  at most this, however large the published batches. 128 MiB: a plain 100,000 x 1 KiB
 *  fire-and-forget loop read by a plain subscriber peaked at 10-13 MiB of backlog over TLS and
 *  28-38 MiB over QUIC, but once publish() got cheaper the QUIC subscriber (slower than the
 *  publisher, issue 25) lost 17 % of that loop at 64 MiB in a full test-suite run; only a
 *  subscriber slower than the stream for longer than this loses records. */
export const SUBSCRIBER_QUEUE_BYTES_DEFAULT = 128 * 1024 * 1024;
/** Ceiling on the per-subscriber byte budget: 1,024 subscriptions per connection at this bound
 *  would already be 256 GiB, so it only stops a typo from unbounding the queue. */
export const SUBSCRIBER_QUEUE_BYTES_MAX = 256 * 1024 * 1024;
/** Floor on the byte budget: one ordinary batch must fit, or nothing could be queued behind one. */
export const SUBSCRIBER_QUEUE_BYTES_MIN = 64 * 1024;
/** Payload bytes of contiguous queued batches merged into one event frame for a subscriber that
 *  fell behind (fewer frames and client wake-ups); a subscriber that keeps up gets each batch's
 *  shared encoding instead. Well under the client's frame bound. */
export const EVENT_COALESCE_BYTES_MAX = 256 * 1024;
/** Records merged into one event frame for a subscriber that fell behind (decode cost per frame). */
export const EVENT_COALESCE_RECORDS_MAX = 4096;

/** Tenant key sets fetched from the control plane's JWKS (issue 21, reference §4.2). */
/** How long a fetched JWKS is kept: the reference's 1 h, which key rotation waits out (stage,
 *  wait 1 h, activate). An unknown kid does not refetch, so a forged kid costs no fetch. */
export const JWKS_CACHE_MS = 60 * 60 * 1000;
/** How long a failed fetch (or an empty key set) is remembered: a burst of connections for a
 *  tenant whose JWKS does not answer costs one fetch per 5 s, not one per connection. */
export const JWKS_FAILURE_MEMORY_MS = 5_000;
/** A token naming a kid the cached set lacks refetches the set at most this often per tenant
 *  (a tenant deleted and initialized again signs with a new key; a forged kid costs this). */
export const JWKS_UNKNOWN_KID_REFETCH_MS = 5_000;
/** JWKS fetches running at once; further tenants wait for a slot (a connect storm across many
 *  tenants cannot open hundreds of requests to the control plane). */
export const JWKS_FETCHES_IN_FLIGHT_MAX = 8;
/** Deadline of one JWKS fetch. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** Bytes of a JWKS answer read: a tenant has at most a few keys (KEYS_PER_TENANT_MAX). */
export const JWKS_BYTES_MAX = 64 * 1024;
/** Tenants whose key sets are cached at once; the least recently fetched is dropped past it. */
export const JWKS_TENANTS_MAX = 10_000;
/** Bytes of `auth.keys_file` read at start. */
export const KEYS_FILE_BYTES_MAX = 1024 * 1024;
/** How often `cluster.node_token_file` is re-read (a rotated credential is picked up within). */
export const NODE_TOKEN_REREAD_MS = 30_000;
/** Bytes of a node token file read. */
export const NODE_TOKEN_FILE_BYTES_MAX = 16 * 1024;
/** Default per-IP connection bound: a quarter of the broker's, so one host cannot take them all. */
export const CONNECTIONS_PER_IP_DEFAULT = 1024;
/** Scopes of subscriptions and watches one stream remembers, checked again when the
 *  connection's token changes (a narrower token ends what it no longer allows); a stream at it
 *  is refused another scope (none is forgotten). Above the subscriptions and watches a
 *  connection may hold at once. */
export const LONG_LIVED_SCOPES_PER_STREAM_MAX = 2_048;
/** How long the expiry notice on a control stream may take to write before the subscriptions
 *  and watches it opened are ended anyway (a peer that stopped reading cannot keep them). */
export const TOKEN_EXPIRY_NOTICE_MS_MAX = 1_000;
/** Quiet time after the native-memory collector's last full collection before it returns memory
 *  (V8's memory-reducing collections, then glibc's malloc_trim(0): util/reclaim.ts). Churn that
 *  brings a collection within this time (64 closes in 10 s) reuses what it freed, so it postpones
 *  the return (up to TRIM_DEFER_MS_MAX); slower churn gets quiet-time collections at most every
 *  30 s (@felix/transport), so a return costs at most once per 30 s. At 3 s, 20-cycle/s TLS
 *  churn under load returned memory every 4-18 s at 460-690 ms each (the soak, 2026-12-02). */
export const TRIM_QUIET_MS = 10_000;
/** Longest a trim waits behind a steady stream of collections: under constant churn the freed
 *  memory still goes back at least this often. */
export const TRIM_DEFER_MS_MAX = 60_000;

// ---- test-only fault seams (docs/reliability.md, "Fault seams in the broker") and peer probes ----

/** How often the partition file is re-read (the storage fault file is read on demand with the
 *  same age bound, @felix/storage FAULT_FILE_POLL_MS): a harness's cut takes effect within it. */
export const FAULT_FILE_POLL_MS = 50;
/** Bytes of the partition file read; the rest is ignored. */
export const PARTITION_FILE_BYTES_MAX = 64 * 1024;
/** `node:<id>` entries the partition file may name; further ones are ignored (and counted). */
export const PARTITION_PEERS_MAX = 1024;
/** Default interval of the peer probes (`cluster.peer_probe_interval_ms`); 0 turns them off. */
export const PEER_PROBE_INTERVAL_MS_DEFAULT = 1_000;
/** Ceiling on the probe interval. */
export const PEER_PROBE_INTERVAL_MS_MAX = 600_000;
/** Peers probed per round, in node-id order; the rest are not probed (and have no gauge). */
export const PEER_PROBE_PEERS_MAX = 64;
/** One probe's TCP connect gives up after this (or the interval, if shorter). */
export const PEER_PROBE_CONNECT_MS_MAX = 1_000;

/** Connections the internal (broker-to-broker) listener serves at once; more are closed on
 *  arrival. A cluster of tens of brokers needs a few per peer. */
export const INTERNAL_CONNECTIONS_MAX = 512;

/** Time a peer has to send its Hello on a new internal connection. */
export const INTERNAL_HELLO_TIMEOUT_MS = 5_000;

/** Streams a peer may have open on one internal connection (one request per stream). */
export const INTERNAL_STREAMS_PER_CONNECTION_MAX = 1_024;

/** Bound on dialling a peer broker and greeting it (a leader's replication link). */
export const PEER_DIAL_TIMEOUT_MS = 5_000;
/** Keep-alive interval of a link to a peer broker (the transport's default is 10 s): a live
 *  peer answers each within milliseconds, so over QUIC a peer that left one unanswered is probed
 *  and, when its host says nothing listens any more (SIGKILLed), the link closes about 1.25 s
 *  after its last packet instead of 10 s; forwards and shipping to it fail then, not at their
 *  own timeouts. One small packet each way a second per link. */
export const PEER_KEEPALIVE_INTERVAL_MS = 1_000;
/**
 * How long a new leader's fence may wait for a majority of the replica set before the shard's
 * open is abandoned (it stays unserved, refused `not_ready`), and when the open is tried again.
 * The reconcile pass waits for the fence, so this also bounds how long one shard holds it up.
 */
export const FENCE_DEADLINE_MS = 5_000;
export const FENCE_RETRY_AFTER_MS = 1_000;
/**
 * How long a new leader of a `quorum` shard waits, after its fence, for a majority to hold its
 * generation-start record before it serves the shard; past it the open is abandoned like a
 * failed fence (tried again after FENCE_RETRY_AFTER_MS, the record kept: it is not appended
 * twice). Like the fence it holds up the reconcile pass.
 */
export const GENERATION_START_COMMIT_DEADLINE_MS = 5_000;

/**
 * How long a broker waits for the owner's answer to a forwarded write, beyond the owner's own
 * `broker.publish_quorum_timeout_ms` (a publish, cache put or delete, counter add to a quorum
 * shard waits that long there), so the owner's `quorum_timeout` arrives first. Past it the client hears `unacknowledged`
 * (outcome unknown: the owner may have done it) and the forward is never resent. Above a
 * durable append's fsync under load, and with the default quorum wait below the client's own
 * request timeout (30 s by default) so the client hears why.
 */
export const FORWARD_TIMEOUT_MS = 5_000;

/** How long a forward waits for its link to the leader when none is open yet (the dial itself
 *  goes on, bounded by PEER_DIAL_TIMEOUT_MS, for the forwards after it): past it the forward is
 *  refused `shard_unavailable`, nothing sent, and the client retries. A live peer's handshake
 *  takes milliseconds; a stopped one (SIGSTOP, a hung host) accepts the TCP connection and never
 *  answers, and a trial's publish waited the whole 5 s dial there while the control plane had
 *  already named the new leader. */
export const FORWARD_LINK_WAIT_MS = 1_000;

/** Forwards one broker has in flight at once, over all peers; more are shed `overloaded`
 *  (nothing was sent, so the client may retry). */
export const FORWARDS_IN_FLIGHT_MAX = 4_096;

/** Forwards in flight to one peer (each is a stream of the one connection to it). */
export const FORWARDS_IN_FLIGHT_PER_PEER_MAX = 512;

/** After a log riding with a led shard (group state, cache, counters) failed to open for
 *  shipping, the shard table tries again this much later (one pass, not a tight loop). */
export const RIDING_LOG_RETRY_MS = 1_000;

/** A newly led quorum cache shard whose log failed to open while its serving was held back
 *  (cluster/cache-leading.ts, CommittingCaches) looks at its logs again after this. */
export const COMMIT_HOLD_RETRY_MS = 1_000;
/** While the control plane keeps not answering, the broker's log reminds of it this often
 *  (with the latest reason: a refused connection can turn into a certificate error). */
export const CONTROLPLANE_OUTAGE_REMIND_MS = 60_000;
/** A kind of control-plane call that failed and has not failed again for this long counts as
 *  answered once another call answers (a feed's long poll sent after an outage answers only
 *  when its wait, at most 25 s, ends). Longer than CONTROLPLANE_RETRY_MS_MAX, so a call that
 *  keeps failing keeps the outage open. */
export const CONTROLPLANE_OUTAGE_CLEAR_MS = 30_000;

/** Longest creation id a catalog item may carry (the control plane's are 36-char UUIDs). */
export const NAME_UID_CHARS_MAX = 64;
/** Largest name-incarnation file read back (cluster/name-incarnations.ts): its id and width. */
export const NAME_MARKER_BYTES_MAX = 256;
/** Largest shard lineage file read back (cluster/lineage-markers.ts): one generation. */
export const LINEAGE_MARKER_BYTES_MAX = 64;
/** Nesting a JSON request's lone-surrogate check walks (session/well-formed.ts): a request's
 *  strings are at its top level or in its list items' fields. */
export const JSON_STRING_CHECK_DEPTH_MAX = 4;
/** A storage directory whose fsyncs keep failing (a follower reopening its copy on each of its
 *  leader's requests) is logged again at most this often, with the failures between. */
export const SYNC_FAILURE_LOG_EVERY_MS = 60_000;
/** Directories whose last sync-failure line the broker remembers (util/sync-watch-io.ts). */
export const SYNC_FAILURE_DIRS_MAX = 1_024;
