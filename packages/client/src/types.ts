/**
 * The public option and result types of the client, in a module of their own so that the files
 * using them (client, publisher, connection) import types without importing one another.
 */

export interface TlsOptions {
  /** PEM CA bundle that signed the broker's certificate. */
  ca?: string;
  /** SHA-256 fingerprint of the broker's certificate (hex). */
  fingerprint?: string;
  /** Accept any certificate: development only. */
  insecure?: boolean;
  serverName?: string;
}

/** Answers a fresh token (a JWT whose `iat`/`exp` the client reads to schedule the next call). */
export type TokenProvider = () => Promise<string> | string;

export interface ConnectOptions {
  /** Broker addresses, `quic://host:port` or `tls://host:port`; several are seeds tried in turn. */
  servers: string[];
  tenant: string;
  /**
   * The token every stream authenticates with: a string (used as is, for the client's life), or
   * a provider asked for a fresh one at connect and again about two thirds into each token's
   * lifetime; the fresh one re-authenticates the live connection in band (`reauth`) when the
   * broker offers it, else it is used from the next reconnect on.
   */
  token?: string | TokenProvider;
  namespace?: string;
  tls?: TlsOptions;
  reconnect?: { baseMs?: number; maxDelayMs?: number; attemptsMax?: number };
  connectTimeoutMs?: number;
  /** A broker silent this long is declared dead and the client reconnects (default 15 s). */
  idleTimeoutMs?: number;
  /** How long a call waits for a connection during a reconnect, and for its answer: a publish's
   *  ack, a subscription's opening, a request on the request stream (cache, counter, group,
   *  cluster lookups), a group poll past its `waitMs` (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * Accepted and ignored. It bounded how long a subscription or a cache watch kept trying to
   * reach its shard's owner; they now keep trying for as long as the client runs, as a
   * `group.consume()` loop does (README, "Clusters"; docs/queues.md).
   * @deprecated
   */
  failoverDeadlineMs?: number;
  /**
   * Route each shard's requests to its owner when the broker offers discovery (a control-plane
   * cluster): default true. False: every request goes to the connected broker, and a shard led
   * elsewhere fails with NotLeaderError (the behaviour before routing).
   */
  routing?: boolean;
  /** Ends `connect()` with AbortedError when it aborts, a dial still waiting included. */
  signal?: AbortSignal;
}

export interface PublishOptions {
  /** Routing key: records with one key land on one shard, in order. */
  key?: Uint8Array | string;
  /** Wait for the broker's ack (default true). Unacked publishes resolve once written. */
  ack?: boolean;
  /**
   * At-least-once: an acked publish whose connection is lost before its ack (a failover) is sent
   * again, to the shard's owner as then known, instead of failing with OutcomeUnknownError; the
   * record may then be in the log twice. Default false (at most once: OutcomeUnknownError).
   */
  atLeastOnce?: boolean;
  signal?: AbortSignal;
}

export interface PublishResult {
  /** Offset of the record in its shard; null for an unacked publish. */
  offset: number | null;
  /** The shard the record went to (unkeyed: 0); null only when the stream's width could not be
   *  read (`a_keyed_publish_answers_the_shard_its_record_went_to`). */
  shard: number | null;
}

/** Where each shard of a subscription starts: `offsets[shard]` (a shard's next offset to read),
 *  and `otherwise` for a shard the map does not name (absent: every shard must be named). */
export interface ShardOffsets {
  offsets: Readonly<Record<number, number>>;
  otherwise?: 'earliest' | 'latest';
}

export interface SubscribeOptions {
  /** `latest` (default), `earliest` (oldest retained), an exact offset (needs `shard` on a
   *  multi-shard stream), `{ time }` (a Date or µs since the epoch): each shard from its first
   *  record appended at or after it (`offsetForTime`), or from its tail when none is yet; or
   *  `{ offsets }`: each shard from its own offset (what `Subscription.positions()` reported:
   *  a resume with no gap and no duplicate), every shard named unless `otherwise` says where
   *  the ones not named start. */
  from?: 'latest' | 'earliest' | number | { time: Date | number } | ShardOffsets;
  /** Read one shard; default every shard of the stream, merged. */
  shard?: number;
  signal?: AbortSignal;
  /** Envelopes the broker queues for this subscriber before it drops (and reports). */
  queueCapacity?: number;
  /** Batches a merged subscription buffers between its shards and the caller. */
  bufferBatches?: number;
  /** Each event carries `timestampMicros`, its record's append time (the broker sends the
   *  timestamped layout to this subscription only). Default false. */
  timestamps?: boolean;
}

export interface PublisherOptions {
  /** How long the first record of a batch waits for company (default 1 ms; 0 = the end of the
   *  turn, on the client's turn batcher; at most PUBLISHER_LINGER_MS_MAX, a day). */
  lingerMs?: number;
  /** Send a batch once it holds this many records (default 1,024; 1 to 65,536, what one
   *  publish frame carries). */
  maxBatchRecords?: number;
  /** Send a batch once it holds this many payload bytes (default 1 MiB; a whole number >= 1). */
  maxBatchBytes?: number;
  /** Wait for acks (default true). */
  ack?: boolean;
  /** Resend a batch whose ack was lost to a failover instead of failing it (see
   *  `PublishOptions.atLeastOnce`): its records may then be in the log twice. Default false. */
  atLeastOnce?: boolean;
}
