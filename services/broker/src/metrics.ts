/** The broker's Prometheus metrics (prom-client), one registry per broker instance. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { TallyCounter, TallyHistogram } from './util/tally-metrics.js';

/** Label value indexes of `publishes` (frame) and `appendLatency` (durable). */
export const FRAME_JSON = 0;
export const FRAME_BINARY = 1;
export const NOT_DURABLE = 0;
export const DURABLE = 1;

export class BrokerMetrics {
  readonly registry = new Registry();
  readonly connections = new Gauge({
    name: 'felix_broker_connections',
    help: 'Open client connections',
    labelNames: ['transport'],
    registers: [this.registry],
  });
  readonly connectionsRefused = new Counter({
    name: 'felix_broker_connections_refused_total',
    help: 'Connections closed on arrival (connection limit, per-IP limit, TLS handshakes in flight, draining)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly storageSyncFailures = new Counter({
    name: 'felix_broker_storage_sync_failures_total',
    help: 'fdatasyncs of a log file or directory that failed (each poisons its log until a restart)',
    registers: [this.registry],
  });
  /** What `felix_broker_streams` counts at each scrape: the catalog the broker serves, YAML or
   *  the control plane's feed (set once it opens). */
  streamsServed: (() => readonly { config: { durable: boolean } }[]) | null = null;
  readonly streams: Gauge<'durable'> = new Gauge({
    name: 'felix_broker_streams',
    help: 'Streams in the catalog',
    labelNames: ['durable'],
    registers: [this.registry],
    collect: () => {
      const all = this.streamsServed?.() ?? [];
      const durable = all.filter((s) => s.config.durable).length;
      this.streams.set({ durable: 'true' }, durable);
      this.streams.set({ durable: 'false' }, all.length - durable);
    },
  });
  // The publish path's metrics are tallies (util/tally-metrics.ts): counted as plain numbers.
  readonly publishes = new TallyCounter(
    'felix_broker_publishes_total',
    'Published batches accepted',
    this.registry,
    { name: 'frame', values: ['json', 'binary'] },
  );
  readonly publishedRecords = new TallyCounter(
    'felix_broker_published_records_total',
    'Records appended',
    this.registry,
  );
  readonly publishedBytes = new TallyCounter(
    'felix_broker_published_bytes_total',
    'Payload bytes appended',
    this.registry,
  );
  readonly publishErrors = new Counter({
    name: 'felix_broker_publish_errors_total',
    help: 'Publishes answered with an error',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly deliveredRecords = new Counter({
    name: 'felix_broker_delivered_records_total',
    help: 'Records written to subscribers',
    registers: [this.registry],
  });
  readonly deliveredBytes = new Counter({
    name: 'felix_broker_delivered_bytes_total',
    help: 'Event frame bytes written to subscribers',
    registers: [this.registry],
  });
  readonly eventBatchesEncoded = new Counter({
    name: 'felix_broker_event_batches_encoded_total',
    help: 'Live event batch encodings (one per published batch and variant, whatever the fanout)',
    registers: [this.registry],
  });
  readonly subscriptions = new Gauge({
    name: 'felix_broker_subscriptions',
    help: 'Active subscriptions',
    registers: [this.registry],
  });
  readonly fanoutQueueDepth = new Gauge({
    name: 'felix_broker_fanout_queue_depth_max',
    help: 'Deepest subscriber queue, in envelopes, at scrape time',
    registers: [this.registry],
  });
  readonly fanoutQueued = new Gauge({
    name: 'felix_broker_fanout_queued_envelopes',
    help: 'Envelopes queued across all subscribers at scrape time',
    registers: [this.registry],
  });
  readonly fanoutDropped = new Counter({
    name: 'felix_broker_fanout_dropped_records_total',
    help: 'Records dropped for a slow subscriber (drop-new policy)',
    registers: [this.registry],
  });
  readonly fanoutQueuedBytes = new Gauge({
    name: 'felix_broker_fanout_queued_bytes',
    help: 'Bytes (payloads plus 4 per record) queued across all subscribers at scrape time',
    registers: [this.registry],
  });
  readonly replicationLag = new Gauge({
    name: 'felix_broker_replication_lag_records',
    help: 'Records this leader holds that its followers have not confirmed, summed over every log of the shards it ships (stream records, group cursors, dead letters, cache and counter logs) and their followers, at scrape time (what a failover under leader consistency can lose)',
    registers: [this.registry],
  });
  readonly replicationUnsynced = new Gauge({
    name: 'felix_broker_replication_unsynced_followers',
    help: 'Distinct followers this leader leaves out of quorum acks, over the shards it ships, because they confirm written, not synced, records while this leader syncs before acking (a weaker durable.fsync_mode), as each quorum log last judged them',
    registers: [this.registry],
  });
  readonly replicationExposed = new Gauge({
    name: 'felix_broker_replication_exposed_records',
    help: 'Per replicated shard this broker leads: for a leader-consistency stream, acked records above what its most caught-up in-sync follower confirmed, at scrape time (what a failover now would lose); 0 with no follower in sync (the shard then waits for its leader), and 0 for quorum streams and caches',
    labelNames: ['kind', 'tenant', 'namespace', 'stream', 'shard'] as const,
    registers: [this.registry],
  });
  readonly replicationBackoffs = new Counter({
    name: 'felix_broker_replication_backoffs_total',
    help: 'Times this leader waited before shipping to a follower again because an exchange failed (no answer within its timeout, or the follower asked for a resend: a shard it has not heard of yet, a broker shutting down), over every shard and follower; a steady rise means a follower is away (the log names it)',
    registers: [this.registry],
  });
  readonly replicationRebuilds = new Counter({
    name: 'felix_broker_replication_rebuilds_total',
    help: "Followers this leader rebuilt, by log (stream, cache, groupCursors, deadLetters, counters): a follower whose copy lay wholly below the leader's base (back after an absence longer than retention, or behind a compaction) discarded it and started at the base, then caught up",
    labelNames: ['log'] as const,
    registers: [this.registry],
  });
  readonly replicationInSync = new Gauge({
    name: 'felix_broker_replication_in_sync_followers',
    help: 'Per replicated shard this broker leads (kind: stream or cache; stream: its name): followers that held its whole log within cluster.replica_lag_max_ms, at scrape time (0 means a failover of this shard cannot happen until it is back)',
    labelNames: ['kind', 'tenant', 'namespace', 'stream', 'shard'] as const,
    registers: [this.registry],
  });
  readonly quorumWaits = new Counter({
    name: 'felix_broker_quorum_waits_total',
    help: 'Publishes, cache writes and counter adds of quorum shards that waited for a majority, by outcome: committed (acked once a majority held them), timeout (answered quorum_timeout, outcome unknown) or abandoned (the shard stopped being served first)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly fanoutQueuedBytesMax = new Gauge({
    name: 'felix_broker_fanout_queued_bytes_max',
    help: 'Bytes queued for the fullest subscriber at scrape time (within broker.subscriber_queue_bytes)',
    registers: [this.registry],
  });
  readonly eventBatchesMerged = new Counter({
    name: 'felix_broker_event_batches_merged_total',
    help: 'Published batches sent merged with contiguous ones to a subscriber that fell behind',
    registers: [this.registry],
  });
  readonly lossNotices = new Counter({
    name: 'felix_broker_loss_notices_total',
    help: 'Loss notices (empty event batches) sent to subscribers whose queue dropped records',
    registers: [this.registry],
  });
  readonly subscriptionsLagged = new Counter({
    name: 'felix_broker_subscriptions_lagged_total',
    help: 'Subscriptions ended with subscription_lagged',
    registers: [this.registry],
  });
  readonly fsyncs = new Counter({
    name: 'felix_broker_durable_advances_total',
    help: 'Durable-offset advances reported by the logs (one per completed flush)',
    registers: [this.registry],
  });
  readonly appendLatency = new TallyHistogram(
    'felix_broker_append_seconds',
    'Publish batch append latency until durable under the stream fsync mode',
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    this.registry,
    { name: 'durable', values: ['false', 'true'] },
  );
  readonly badInput = new Counter({
    name: 'felix_broker_bad_input_total',
    help: 'Malformed or refused client input, by reason',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly requestsForbidden = new Counter({
    name: 'felix_broker_requests_forbidden_total',
    help: 'Requests refused `forbidden`: the token does not grant the action on the object',
    labelNames: ['action'],
    registers: [this.registry],
  });
  readonly authentications = new Counter({
    name: 'felix_broker_authentications_total',
    help: 'Stream auth and reauth outcomes (ok, or the refusal reason)',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  readonly tokensExpired = new Counter({
    name: 'felix_broker_connection_tokens_expired_total',
    help: 'Connections whose token expired while open (their subscriptions and watches ended)',
    registers: [this.registry],
  });
  readonly authTimeouts = new Counter({
    name: 'felix_broker_auth_timeouts_total',
    help: 'Connections closed for authenticating nothing in time',
    registers: [this.registry],
  });

  readonly requestsOverloaded = new Counter({
    name: 'felix_broker_requests_overloaded_total',
    help: 'Streams refused with overloaded: their read would take the broker past broker.inflight_request_bytes',
    registers: [this.registry],
  });
  /** The request bytes in flight now; the session's broker-wide ledger sets it (read at scrape). */
  inflightRequestBytesNow: () => number = () => 0;
  readonly inflightRequestBytes: Gauge = new Gauge({
    name: 'felix_broker_inflight_request_bytes',
    help: 'Request bytes in flight at scrape time: partial frames plus requests not yet answered',
    registers: [this.registry],
    collect: (): void => this.inflightRequestBytes.set(this.inflightRequestBytesNow()),
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'felix_broker_process_' });
  }
}
