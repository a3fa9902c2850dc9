/**
 * Every bound the client keeps, with why. Options may lower or raise the `_DEFAULT`s; the
 * `_MAX`s are ceilings.
 */

/** First reconnect delay cap; the delay is uniform in [0, min(cap, base * 2^attempt)]. */
export const RECONNECT_BASE_MS_DEFAULT = 100;
/** Largest reconnect delay: long enough to spare a restarting broker, short enough to resume. */
export const RECONNECT_DELAY_MS_MAX_DEFAULT = 2_000;
/** Reconnect attempts before the client gives up and closes (about an hour at the cap). */
export const RECONNECT_ATTEMPTS_MAX_DEFAULT = 2_000;

/** Bound on dialing plus the TLS/QUIC handshake plus `auth`. */
export const CONNECT_TIMEOUT_MS_DEFAULT = 10_000;
/** A broker silent this long is declared dead (keep-alives go out at a third of it). */
export const IDLE_TIMEOUT_MS_DEFAULT = 15_000;
/** Longest interval between keep-alives (whatever the idle bound): each one makes a live broker's
 *  transport answer (a QUIC ACK, a PONG), so a broker that answers nothing for several of them
 *  is silent, not quiet. One small packet each way per second per connection. */
export const KEEPALIVE_INTERVAL_MS_MAX = 1_000;
/** A connection from which nothing at all has arrived (not even the answer to a keep-alive) for
 *  this long is declared lost (or the idle bound, when shorter), over QUIC whether requests,
 *  readers or nothing wait on it, over TLS when requests wait: a SIGSTOPped, `docker kill`ed or partitioned broker sends no RST, and
 *  waiting for the idle bound and then the request timeout held publishes for 40 s after the
 *  control plane had named a new leader (and readers for the idle bound, 15 s). Three
 *  keep-alives unanswered: a live broker under load still answers at the transport within
 *  milliseconds. */
export const PEER_SILENCE_MS = 3_000;
/** Over TLS a connection with no request waiting is judged by its silence only while this
 *  client has sent at most this many bytes since it last heard from the broker, and holds none
 *  unsent: the broker's answer to a keep-alive queues behind what it has yet to read from this
 *  client (a flood of unacknowledged publishes: seconds), but a connection that only reads
 *  sends nothing but its keep-alives while it hears nothing, and a broker reads this much in
 *  well under a millisecond (over a slow uplink, 20 KB/s, in 3 s). */
export const SILENCE_JUDGED_SENT_BYTES_MAX = 64 * 1024;
/** How often a connection checks its waiting requests: that the broker was heard from
 *  (PEER_SILENCE_MS), and that the oldest unanswered request of each request stream (the request
 *  stream, a group poll's) has waited less than its bound. A request is stamped with the count of
 *  these checks so far (a field read: no clock read, timer or promise of its own), so it fails
 *  between its bound and two checks past it. */
export const CONNECTION_CHECK_MS = 250;
/** How long a call waits for a connection (during a reconnect) or an answer: a request on a
 *  request stream (cache, counter, group and cluster calls, `offset_for_time`) whose answer has
 *  not come within it (a group poll: within it past the poll's own `waitMs`) fails, and so does
 *  every request behind it on that stream, which is reset (CONNECTION_CHECK_MS). */
export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;

/** How long a subscription or a cache watch waits, after the broker's answer, for the event
 *  stream the broker opens for it (requestTimeoutMs when shorter): a live broker opens it with
 *  (or just before) the answer, so only a broker that crashed or misbehaved in between, or a
 *  stream lost on the way, takes this long; the wait was unbounded. */
export const EVENT_STREAM_WAIT_MS_MAX = 5_000;
/** Subscribes (or watches) made again in a row after an event stream that never came, as after
 *  a lost stream, before the reader ends with EventStreamTimeoutError: one missing stream is
 *  recovered from, a broker that never opens them ends the reader instead of retrying forever. */
export const EVENT_STREAM_REOPENS_MAX = 3;

/** Subscribes (or watches) made again in a row after one whose opening the broker never
 *  answered within requestTimeoutMs (its `subscribe` or `cache_watch`, or the `offset_for_time` a
 *  time start asks first), before the reader ends with SubscribeTimeoutError (TimeoutError for
 *  the `offset_for_time`): one
 *  answer lost or one stalled handler is recovered from, a broker that answers none ends the
 *  reader instead of holding its `for await` for as long as the connection lives. Each attempt
 *  waits the whole request timeout, so one retry, not the three an event stream gets. */
export const SUBSCRIBE_UNANSWERED_RETRIES_MAX = 1;

/** Unanswered publishes per connection when the broker grants no window (its default 256). */
export const PUBLISH_WINDOW_DEFAULT = 256;
/** Records of single publishes (acked or not) made in one turn that one frame may gather (each
 *  acked caller keeps its own offset): large enough that 64 or 256 concurrent callers share a
 *  frame, small enough that one frame's append stays short. */
export const PUBLISH_COALESCE_RECORDS_MAX = 1024;
/** Payload bytes one gathered publish frame may carry: well under the broker's frame bound. */
export const PUBLISH_COALESCE_BYTES_MAX = 1024 * 1024;
/** Records one `publisher()` batch may carry before it is sent without waiting for linger. */
export const PUBLISHER_BATCH_RECORDS_MAX_DEFAULT = 1024;
/** Payload bytes one publisher batch may carry: well under the broker's 16 MiB frame bound. */
export const PUBLISHER_BATCH_BYTES_MAX_DEFAULT = 1024 * 1024;
/** Publishes a publisher holds waiting to be batched; callers wait beyond it (backpressure). */
export const PUBLISHER_PENDING_RECORDS_MAX = 65_536;
/** The longest `lingerMs` a publisher takes: a day (a timer past 2^31 - 1 ms fires at once). */
export const PUBLISHER_LINGER_MS_MAX = 86_400_000;
/** Unacknowledged records (queued or in flight) at which a publisher's `send()` answers false:
 *  the caller should await `ready()`, as with a stream's `write()`. */
export const PUBLISHER_UNACKED_RECORDS_HIGH = 65_536;
/** Unacknowledged records beyond which `send()` refuses (PublisherFullError): the bound on what
 *  a caller that ignores false can pile up. */
export const PUBLISHER_UNACKED_RECORDS_MAX = 4 * PUBLISHER_UNACKED_RECORDS_HIGH;
/** Unacknowledged payload bytes at which `send()` answers false: enough to keep a connection busy
 *  across a round trip at hundreds of MB/s, small enough that encoded batches die young. */
export const PUBLISHER_UNACKED_BYTES_HIGH = 8 * 1024 * 1024;

/** First resubscribe delay cap after a refusal the broker says to retry (shard unavailable,
 *  draining, led elsewhere); the delay is uniform in [0, min(max, base * 2^refusal)]. */
export const RESUBSCRIBE_BASE_MS = 50;
/** Largest delay between such resubscribes: a refusal may last (a shard being moved), and without
 *  a delay a subscription resubscribed as fast as round trips allowed; a second bounds how late a
 *  shard that comes back is picked up again. */
export const RESUBSCRIBE_DELAY_MS_MAX = 1_000;
/** Largest delay between a subscription's resubscribes (or a watch's re-watches) after a refusal
 *  that asks for a backoff (`overloaded`, a limit that clears, a name not yet loaded): the reader
 *  retries for as long as the client runs, as a consume loop does
 *  (GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX), so it asks a busy broker about once per this. */
export const RESUBSCRIBE_BUSY_DELAY_MS_MAX = 5_000;

/** Events a merged (multi-shard) subscription buffers between its shard readers and the caller. */
export const SUBSCRIPTION_BUFFER_BATCHES_DEFAULT = 64;
/** Envelopes the client asks the broker to queue per subscription (`queue_capacity`). */
export const SUBSCRIBE_QUEUE_CAPACITY_DEFAULT = 1024;

/** Status events one `status()` listener may have unread; the oldest are dropped past it. */
export const STATUS_BUFFER_EVENTS_MAX = 256;
/** Event streams the broker may open that no subscription has claimed yet. */
export const UNCLAIMED_EVENT_STREAMS_MAX = 64;
/** Largest frame the client accepts from the broker (the broker's own frame bound). */
export const FRAME_BYTES_MAX = 16 * 1024 * 1024;
/** Largest single payload the client will send (leaves room for the batch header). */
export const PAYLOAD_BYTES_MAX = 16 * 1024 * 1024 - 64 * 1024;
/** Shard counts cached per stream name (a lookup per unseen stream otherwise). */
export const SHARD_CACHE_STREAMS_MAX = 4096;

/** A cache or counter key, in UTF-8 bytes: the broker refuses a longer one (a fixed bound of
 *  its store, services/broker's CACHE_KEY_BYTES_MAX, not a setting), so the client refuses it
 *  before sending, as it refuses keys the wire cannot carry. */
export const CACHE_KEY_BYTES_MAX = 1024;

/** Records a consumer-group poll asks for when the caller names none (the broker caps at 1,000). */
export const GROUP_POLL_RECORDS_DEFAULT = 100;
/** A named consumer (`felix.group(…, { consumer })`), in UTF-8 bytes (the broker's bound too). */
export const GROUP_CONSUMER_NAME_BYTES_MAX = 128;
/** A group name's bound in UTF-8 bytes: the broker's (GROUP_NAME_BYTES_MAX there), checked here
 *  so a name it would refuse fails at `felix.group()`, as a consumer name does. */
export const GROUP_NAME_BYTES_MAX = 255;
/** Long-poll wait of a group poll: long enough to idle cheaply, inside the broker's 30 s cap. */
export const GROUP_POLL_WAIT_MS_DEFAULT = 10_000;
/** Bytes of frames one stream write joins into one copy at the end of a turn (small requests,
 *  settles and unacked publishes: one write instead of one each); frames queued beyond it are
 *  written one after another as they are, so a large publish frame is never copied. */
export const WRITE_COALESCE_BYTES_MAX = 256 * 1024;
/** Encoded frames from this size are written from a pooled buffer where the stream copies its
 *  writes (QUIC): smaller ones are cheap to allocate. */
export const FRAME_POOL_FRAME_BYTES_MIN = 64 * 1024;
/** Largest pooled buffer: a default publisher batch (PUBLISHER_BATCH_BYTES_MAX_DEFAULT of
 *  payloads and their length prefixes) fits; a larger frame is allocated as before. */
export const FRAME_POOL_BUFFER_BYTES_MAX = 2 * 1024 * 1024;
/** Bytes of free buffers the process's frame pool keeps for the next frames: what a publisher
 *  may have encoded and not yet written (PUBLISHER_UNACKED_BYTES_HIGH), so a steady publisher
 *  allocates none; a buffer given back past it is left to the collector. */
export const FRAME_POOL_BYTES_MAX = 8 * 1024 * 1024;
/** A new pooled buffer is this many bytes rounded up, so batches of about one size share one. */
export const FRAME_POOL_BUFFER_GRAIN_BYTES = 64 * 1024;
/** Flushes one client's turn batcher holds for the end of a turn: one per open batch (a gathered
 *  publish holds a window slot, a writer one per stream, a group one per delay), so far more than
 *  a turn opens; past it the turn's batches go at once rather than hold more. */
export const TURN_FLUSHES_MAX = 65_536;
/** Idle poll streams one Group keeps for reuse (a consume loop needs one; extra ones are closed). */
export const GROUP_POLL_STREAMS_IDLE_MAX = 4;
/** A Group whose poll streams all sat idle this long lets them go (the next poll opens one
 *  again): a handle the caller dropped without `release()` would otherwise hold a stream of
 *  its connection, which allows 1,024, for as long as the connection lives. A consume loop
 *  polls again within GROUP_POLL_WAIT_MS_DEFAULT, so it keeps its stream. */
export const GROUP_POLL_STREAM_IDLE_RELEASE_MS = 30_000;
/** Cache, counter and settle requests unanswered on one connection's request stream; callers
 *  beyond it wait (the broker answers a stream in order and reads at most its window ahead). */
export const REQUESTS_IN_FLIGHT_MAX = 4096;
/** Offsets one `group_ack_batch` names (the broker's bound is 1,000); acks of one turn beyond
 *  it go in further batches. */
export const GROUP_ACK_BATCH_OFFSETS_MAX = 1000;
/** `group_ack_batch` requests one Group keeps unanswered; the acks made meanwhile gather and go
 *  together when one is answered (a full batch goes at once). The broker answers a batch after
 *  the cursor write covering it and would hold acks arriving meanwhile for the next write, so
 *  gathering them costs no cursor write and saves a request and an answer per turn. */
export const GROUP_ACK_BATCHES_IN_FLIGHT_MAX = 1;
/** Offsets one `group_nack_batch` names (the broker's bound is 1,000); a consume loop's
 *  hand-back beyond it goes in further batches. */
export const GROUP_NACK_BATCH_OFFSETS_MAX = 1000;
/** Dead-letter offsets one `group_dead_letters` page holds at most, and its default (the
 *  broker's bound; a broker without pages answers its lowest this many and no more). */
export const GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX = 1000;
/** Polls `group.consume()` keeps in flight ahead of the batch the caller is working on, while
 *  the caller works through batches quickly (GROUP_CONSUME_QUICK_BATCH_MS); otherwise one. More
 *  than one lets the poll round trips overlap one another as well as the caller's work (the
 *  broker answers them one after another from the group's queue). Records polled ahead wait in
 *  the client with their visibility clock running, so this stays small.
 *  GROUP_POLL_STREAMS_IDLE_MAX keeps a stream for each. */
export const GROUP_CONSUME_POLLS_AHEAD_MAX = 3;
/** A batch the caller worked through within this is quick: only then does `consume()` poll more
 *  than one ahead, so records polled ahead wait in the client for about
 *  GROUP_CONSUME_POLLS_AHEAD_MAX x this at most, a small part of any visibility timeout, and a
 *  slow caller keeps the single poll ahead it had before. */
export const GROUP_CONSUME_QUICK_BATCH_MS = 250;
/** The claim length `consume()` assumes when it names none (`visibilityMs`): the broker's default
 *  `groups.visibility_timeout_ms`. A broker configured shorter should be told through
 *  `consume({ visibilityMs })`, which the loop then bounds its holding by. */
export const GROUP_CONSUME_VISIBILITY_MS_ASSUMED = 30_000;
/** The longest `consume()` holds a record it was handed before yielding it: a third of the claim
 *  (GROUP_CONSUME_VISIBILITY_MS_ASSUMED, or the loop's `visibilityMs`), at most this. Past it the
 *  records not yet yielded are released (handed back uncounted) and polled again, rather than
 *  yielded after their claim may have lapsed (worked twice, their attempts raised). */
export const GROUP_CONSUME_HOLD_MS_MAX = 10_000;
/** First delay cap between a consume loop's polls after one failed in a way that passes (a lost
 *  connection, a poll left unanswered, a redirect, a busy broker); the delay is uniform in
 *  [0, min(cap, base * 2^failure)], failures counted in a row (an answered poll starts over). */
export const GROUP_CONSUME_RETRY_BASE_MS = 50;
/** Largest such delay after a lost connection, an unanswered poll or a redirect: the poll itself
 *  waits out the reconnect (or its answer), and a shard's new owner is polled within about this
 *  of serving, as a subscription's (FAILOVER_RETRY_DELAY_MS_MAX). */
export const GROUP_CONSUME_RETRY_DELAY_MS_MAX = 1_000;
/** Largest such delay after a refusal that asks for a backoff (`overloaded`, a limit that clears,
 *  a name not yet loaded): the loop retries for as long as it runs, so each worker of a fleet
 *  asks a busy broker at most about once per this. */
export const GROUP_CONSUME_BUSY_RETRY_DELAY_MS_MAX = 5_000;
/** Bytes of frames one stream's writer holds for the end of a turn: past it the turn's frames
 *  so far are written at once (the transport's buffer bound and `whenWritten` then pace the
 *  caller), so a loop publishing many large records in one turn does not hold them all until
 *  the turn ends. Well above WRITE_COALESCE_BYTES_MAX, so ordinary turns still coalesce. */
export const TURN_WRITE_BYTES_MAX = 4 * 1024 * 1024;
/** Payload bytes one connection's publish pipe gathers over all streams and keys in one turn:
 *  past it every open gather is sealed and handed to the writer at once (each gather alone is
 *  bounded by PUBLISH_COALESCE_BYTES_MAX, their number by the keys a turn names). */
export const TURN_GATHER_BYTES_MAX = TURN_WRITE_BYTES_MAX;

/** Payload bytes a merged (multi-shard) subscription buffers between its shard readers and the
 *  caller (besides SUBSCRIPTION_BUFFER_BATCHES_DEFAULT): batches may be one record or thousands,
 *  so a count alone bounds nothing; past it the readers wait and the broker's queues absorb. */
export const SUBSCRIPTION_BUFFER_BYTES_MAX = 8 * 1024 * 1024;

/** Largest token the client reads the times of (the broker's pre-auth frame bound is larger): a
 *  JWT with a long permission list is a few KiB; anything past this is refused before decoding. */
export const TOKEN_BYTES_MAX = 64 * 1024;
/** A token is refreshed this far into its lifetime (from `iat`, or from when the client got it,
 *  to `exp`): a third of the lifetime is left for the provider and the `reauth` round trip. */
export const TOKEN_REFRESH_AT_LIFETIME_FRACTION = 2 / 3;
/** The shortest wait before a refresh: a token already past its refresh point (a short-lived one,
 *  or a provider handing out the same near-expiry token) is refreshed at most this often. */
export const TOKEN_REFRESH_DELAY_MS_MIN = 1_000;
/** The longest single refresh timer: a token living longer is re-checked after it (a timer
 *  beyond 2^31 - 1 ms would fire at once). */
export const TOKEN_REFRESH_TIMER_MS_MAX = 24 * 60 * 60 * 1_000;
/** How long one call of the token provider may take before it counts as failed. */
export const TOKEN_PROVIDER_TIMEOUT_MS = 30_000;
/** First retry delay cap after a failed refresh (provider failure or a refused `reauth`); the
 *  delay is uniform in [TOKEN_REFRESH_DELAY_MS_MIN, min(max, base * 2^failure)]. */
export const TOKEN_REFRESH_RETRY_BASE_MS = 1_000;
/** Largest delay between refresh retries: short against a token's lifetime (minutes), long
 *  enough not to hammer a failing identity provider. */
export const TOKEN_REFRESH_RETRY_DELAY_MS_MAX = 30_000;
/** Consecutive failed refreshes after which the client stops trying on its timer (about an hour
 *  at the cap); a reconnect refused as unauthenticated still asks the provider again. */
export const TOKEN_REFRESH_ATTEMPTS_MAX = 120;

/** How long `close()` waits for the broker to read (and answer) the publishes made before it,
 *  so fire-and-forget records are not dropped with the connection; then it closes anyway. */
export const CLOSE_DRAIN_MS_MAX = 5_000;
/** How long `close()` first lets the hand-backs of consume loops that just ended reach the
 *  broker (a worker's `break` then `close()`: its unyielded records go back instead of lapsing
 *  after their visibility timeout); then it closes anyway. */
export const CLOSE_HAND_BACK_WAIT_MS_MAX = 2_000;
/** Hand-backs `close()` tracks for that wait (one per ended loop and poll ahead, at a time). */
export const CLOSE_HAND_BACKS_TRACKED_MAX = 4_096;

/** Resubscribes a shard reader (and re-watches a cache watch) makes while the broker answers
 *  `not_leader` when the client has no cluster routing (the broker offers no `shard_owners`): a
 *  move may settle back to this broker within the backoff; past them the subscription (or watch)
 *  fails with NotLeaderError naming the leader. With routing the reader follows the owner
 *  instead (FAILOVER_DEADLINE_MS_DEFAULT). */
export const NOT_LEADER_RESUBSCRIBES_MAX = 3;

/** Broker connections one client keeps open at once (one per broker it routes to, opened when a
 *  shard it uses is led there): a cluster of more brokers than this is served by closing the
 *  least recently used connection that is not the entry broker's. */
export const CLUSTER_CONNECTIONS_MAX = 32;
/** Brokers a topology answer may name that the client keeps (addresses to reconnect through):
 *  the broker's own node book is bounded by a page of the control plane's nodes. */
export const CLUSTER_BROKERS_MAX = 1024;
/** How often a client routing in a cluster asks its entry broker for the topology again (besides
 *  each connect): brokers that joined, or that a broker's node book lacked at connect, are
 *  learned within it. One small request per interval. */
export const TOPOLOGY_REFRESH_MS = 10_000;
/** Streams and caches whose shard owners the client remembers; past it the book starts over
 *  (the owners are asked again on next use). */
export const OWNER_BOOK_NAMES_MAX = 4096;
/** `not_leader` redirects one request follows (never back to a broker already tried for it):
 *  more hops mean the brokers disagree about the owner, and the caller's retry (after fresh
 *  owners) is what settles it. */
export const REDIRECT_HOPS_MAX = 3;
/** The default of `failoverDeadlineMs`, which no reader is bounded by any more: a subscription,
 *  a cache watch and a consume loop all keep looking for their shard's owner for as long as the
 *  client runs (reader-retry.ts, group-consume.ts). Kept so code that names it still builds.
 *  @deprecated */
export const FAILOVER_DEADLINE_MS_DEFAULT = 30_000;
/** First delay cap between attempts to reach a shard's new owner; jittered and doubled per
 *  attempt up to FAILOVER_RETRY_DELAY_MS_MAX. */
export const FAILOVER_RETRY_BASE_MS = 50;
/** Largest delay between attempts to reach a shard's new owner: a promotion is noticed within
 *  about this much of the control plane naming it. */
export const FAILOVER_RETRY_DELAY_MS_MAX = 1_000;
/** Largest delay between attempts of one routed publish refused with nothing written (its
 *  owner unreachable, still opening, not yet named): a caller is waiting, and each refusal is
 *  answered from a broker's memory in milliseconds, so the new leader is tried within this of
 *  serving rather than within FAILOVER_RETRY_DELAY_MS_MAX (a third of it on average at the cap). */
export const PUBLISH_RETRY_DELAY_MS_MAX = 250;
/** How much of its window a publish may have spent before an attempt is sent and still have
 *  that attempt wait its whole request timeout for the ack, on the pipe's own timer (no timer or
 *  promise more): what a first attempt that waited for nothing loses (a cached shard lookup, a
 *  clock tick). An attempt sent later in its window (after a lookup, a reconnect, a retry's
 *  delay) waits only what is left of it, so a publish ends at most this much past its timeout. */
export const PUBLISH_WINDOW_SLACK_MS = 20;
/** A broker whose connection was just lost is not dialed again for this long while another
 *  path exists: its shards are being failed over, and a dial to a dead host costs up to the
 *  connect timeout. */
export const BROKER_SUSPECT_MS = 2_000;
/** Connect bound of a dial to a broker whose connection was lost (or whose dial failed) and that
 *  has not been reached since: a silent broker (stopped, its host dead) answers no handshake, and
 *  a request waiting the whole connect timeout on it was still waiting when the control plane had
 *  named another owner. A live broker handshakes well within it. */
export const UNREACHED_DIAL_TIMEOUT_MS = PEER_SILENCE_MS;
/** A reconnect dials a server with UNREACHED_DIAL_TIMEOUT_MS, but every this-many-th dial of
 *  that server with the whole connect timeout: a stopped broker answers no QUIC handshake, so each
 *  attempt waited 10 s and a restarted broker was reached up to 10 s late, while a broker slow to
 *  handshake (loaded, far away) is still reached by the longer attempts. */
export const RECONNECT_FULL_DIAL_EVERY = 4;
/** Resends of one at-least-once publish caught by a lost connection or a redirect (each to the
 *  shard's owner as then known), within the request timeout; past them OutcomeUnknownError. */
export const AT_LEAST_ONCE_RESENDS_MAX = 5;
/** Attempts of one routed publish refused with nothing written (a redirect, an owner not yet
 *  known or reachable), within the request timeout, which is the bound that ends it: the
 *  delays are full-jitter, 125 ms on average at PUBLISH_RETRY_DELAY_MS_MAX, so 320 attempts span
 *  about 40 s, past the default request timeout (30 s) by many deviations, and a failover on the
 *  control plane's default lease (16-19 s) is ridden through. 128, about 16 s, failed a trial's
 *  publish 15.7 s into such a failover with its timeout half spent. */
export const PUBLISH_ROUTE_ATTEMPTS_MAX = 320;
/** Attempts of one routed cache or counter call refused with nothing done (a redirect, an owner
 *  not yet promoted): as many as a routed publish's, at the same retry delays. */
export const KEYED_ROUTE_ATTEMPTS_MAX = PUBLISH_ROUTE_ATTEMPTS_MAX;
/** How long a reader following its shard's owner retries `not_found` (a name the broker it
 *  asked has not loaded yet, after a move): briefly, as a deleted stream answers it for good. */
export const NOT_FOUND_RETRY_MS = 5_000;

/** The longest TTL a cache put may name: 2^45 ms (about 1,115 years), the broker's bound
 *  (services/broker CACHE_TTL_MS_MAX); a longer one is refused before it is sent. */
export const CACHE_TTL_MS_MAX = 2 ** 45;
