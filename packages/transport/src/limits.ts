/**
 * Every bound @felix/transport keeps, with why the value was chosen. Options may lower or raise
 * the defaults within the `_MAX` ceilings.
 */

/** Idle timeout default: long enough to ride out a GC pause or a brief partition, short enough
 *  that a dead peer frees its streams within half a minute. */
export const IDLE_TIMEOUT_MS_DEFAULT = 30_000;
/** Smallest idle timeout accepted; below this keep-alives cannot keep up on a loaded machine. */
export const IDLE_TIMEOUT_MS_MIN = 50;
/** Keep-alive default: three keep-alives per idle timeout survive two lost ones. */
export const KEEPALIVE_INTERVAL_MS_DEFAULT = 10_000;
/** Bound on a graceful close; after it the connection is destroyed without further I/O. */
export const CLOSE_TIMEOUT_MS_DEFAULT = 2_000;
/** Bound on dialling (TCP/UDP connect plus TLS handshake). */
export const DIAL_TIMEOUT_MS_DEFAULT = 10_000;

/** Concurrent streams each side lets its peer open, per kind. 1024 covers a client with many
 *  subscriptions; each one can buffer at most one stream window. */
export const STREAMS_PER_CONNECTION_DEFAULT = 1024;
/** Ceiling on the concurrent-stream option (keeps worst-case buffering bounded). */
export const STREAMS_PER_CONNECTION_MAX = 65_536;

/** Per-stream receive window of the TLS multiplexer: the most unread bytes a peer may push on
 *  one stream (QUIC's per-stream window is the same). Credit goes back per half window, and each
 *  CREDIT is a TLS record and a socket write of its own when the receiver has nothing else to
 *  send: at 256 KiB that was four small writes per 512 KiB publish batch on each side. */
export const MUX_STREAM_WINDOW_BYTES_DEFAULT = 1024 * 1024;
/** Ceiling on the per-stream window a peer may announce. */
export const MUX_STREAM_WINDOW_BYTES_MAX = 16 * 1024 * 1024;
/** Largest DATA frame payload; larger writes are split. 64 KiB amortises the 9-byte header and
 *  keeps one stream from holding the socket for long. */
export const MUX_FRAME_PAYLOAD_BYTES_MAX = 64 * 1024;
/** Largest control frame payload (CLOSE reason, SETTINGS); decoders reject more before allocating. */
export const MUX_CONTROL_PAYLOAD_BYTES_MAX = 4096;
/** Frames queued in one event-loop turn are coalesced into one socket write until this many
 *  bytes are pending; then they are flushed at once so the batch stays bounded. */
export const MUX_WRITE_BATCH_BYTES_MAX = 256 * 1024;
/** A write() resolves only while the socket's own buffer is below this; otherwise it waits for
 *  'drain'. Bounds the bytes buffered on the send side of one connection. */
export const MUX_SOCKET_BUFFER_BYTES_MAX = 1024 * 1024;
/** Queued frames of one stream are merged into one read chunk up to this size: fewer promises
 *  per byte for small messages, and still one bounded copy. */
export const MUX_READ_MERGE_BYTES_MAX = 64 * 1024;
/** Only queued pieces smaller than this are merged: a larger piece (a slice of a big DATA frame,
 *  handed on without assembly) already pays for its promise, and merging would copy it. */
export const MUX_READ_MERGE_PIECE_BYTES_MAX = 4 * 1024;
/** The region a TLS socket decrypts into: a TLS record carries at most 16 KiB of plaintext, so
 *  a record arrives in one read. */
export const TLS_READ_REGION_BYTES = 16 * 1024;
/** A read this large is handed on as a view of its region (a fresh region takes its place); a
 *  smaller one is copied out at its exact size and the region reused. So a view the application
 *  keeps pins at most 2x its bytes, and a small round trip allocates no region of its own. */
export const TLS_READ_HANDOFF_BYTES_MIN = 8 * 1024;
/** Plaintext a TLS peer may send before the multiplexer starts reading its socket (in practice
 *  the preface and SETTINGS that can share a turn with the handshake); more closes it. */
export const TLS_EARLY_READ_BYTES_MAX = 1024 * 1024;
/** Bytes of the CLOSE reason sent on the wire; longer reasons are cut. */
export const CLOSE_REASON_BYTES_MAX = 1024;

/** Connections one listener holds in their handshake; more are refused on arrival. A handshake
 *  may last the idle timeout, and until it ends no connection limit (they count sessions) can
 *  see it, so without this bound peers that never finish one could pile up descriptors and TLS
 *  state. TLS counts from the TCP accept until the handshake completes or the socket closes;
 *  QUIC from the Initial that carries a valid Retry token (before it the server holds nothing)
 *  until the handshake completes or fails. */
export const HANDSHAKES_IN_FLIGHT_DEFAULT = 1024;
/** Ceiling on that option. */
export const HANDSHAKES_IN_FLIGHT_MAX = 1_000_000;

/** Accepted connections waiting for `connections()` to take them; more are refused. */
export const ACCEPT_BACKLOG_MAX = 1024;
/** Incoming streams waiting for `incoming()` to take them beyond the stream limit never exist,
 *  so this only bounds the queue by the stream limit (kept as a name for the README). */
export const INCOMING_STREAMS_QUEUE_MAX = STREAMS_PER_CONNECTION_MAX * 2;

/** Per-stream bytes the QUIC adapter buffers ahead of the reader (it stops pulling after this). */
export const QUIC_STREAM_READ_AHEAD_BYTES = 256 * 1024;
/** UDP socket send/receive buffer requested for QUIC; the kernel may cap it (net.core.rmem_max).
 *  The 212 KB default overflows under a burst and the loss makes congestion control back off. */
export const QUIC_UDP_BUFFER_BYTES = 8 * 1024 * 1024;
/** Datagram size used when both ends are on loopback (the path MTU is 64 KiB there); fewer,
 *  larger datagrams cut the per-datagram JavaScript cost that bounds QUIC throughput in Node. */
export const QUIC_LOOPBACK_DATAGRAM_BYTES = 65_507;
/** QUIC per-connection and per-stream flow-control windows, initial and ceiling: quiche grows a
 *  window while its reader keeps up, never past these (vendor patch 20). */
export const QUIC_CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024;
export const QUIC_STREAM_WINDOW_BYTES = 1024 * 1024;
/** How long, and how many bytes, a receive-only QUIC stream reset by its reader is read and
 *  discarded waiting for the peer's end or reset (quiche frees it, and gives the peer another
 *  stream, only then); past either the peer is sent STOP_SENDING and the stream stays held. */
export const QUIC_RESET_DRAIN_MS_MAX = 2_000;
export const QUIC_RESET_DRAIN_BYTES_MAX = QUIC_STREAM_WINDOW_BYTES;

/** Closed connections after which the transport asks for a full garbage collection (when the
 *  process gave it a collector): each one leaves native memory (quiche's connection and TLS
 *  state, Node's TLS socket) that V8 cannot see and frees only when it collects the JavaScript
 *  object that owns it. Under churn that memory otherwise piles up to the old-space limit and
 *  stays in the allocator's arenas after it is freed (docs/perf.md, Memory). 64 left QUIC churn
 *  at +19 MiB where 256 left +43 MiB. */
export const RECLAIM_AFTER_CLOSED_CONNECTIONS = 64;
/** Least time between two such collections: churn at any rate costs at most one full
 *  collection per interval. */
export const RECLAIM_INTERVAL_MS_MIN = 2_000;
/** Once closes stop, the closed connections still waiting for a collection get one after this
 *  quiet time: an idle process never collects on its own, so without it what the last closed
 *  connections held (a stalled subscriber's queue, say) stayed until the next load. */
export const RECLAIM_QUIET_MS = 5_000;
/** Closed connections that make a quiet-time collection worth it. */
export const RECLAIM_QUIET_AFTER_CLOSED_CONNECTIONS = 1;
/** Least time between two quiet-time collections: sporadic closes cost at most one full
 *  collection per interval. */
export const RECLAIM_QUIET_INTERVAL_MS_MIN = 30_000;
/** Free buffers the TLS transport keeps for new connections, per kind (16 KiB read regions,
 *  64 KiB write slabs): enough for the connections that open at once under churn, and at most
 *  5 MiB kept after a burst; more are left to the garbage collector. */
export const TLS_BUFFER_POOL_MAX = 64;

/** A QUIC dial also sends this many one-byte datagrams, QUIC_REFUSAL_PROBE_INTERVAL_MS apart,
 *  on a connected UDP socket of its own (quic/refusal-probe.ts): a host whose port is closed
 *  answers one with ICMP port unreachable, which fails the dial at once instead of at its
 *  timeout. More than one, as a datagram or its answer may be lost or rate-limited. */
export const QUIC_REFUSAL_PROBES_MAX = 4;
/** Time between the refusal probes of one dial. */
export const QUIC_REFUSAL_PROBE_INTERVAL_MS = 250;
/** A dialed QUIC connection sends a refusal probe to its peer's address once a keep-alive has
 *  gone unanswered: nothing received for its keep-alive interval (1 s without one) and this
 *  grace, which covers the peer's ACK delay and the watch's own checks (quic/refusal-probe.ts,
 *  PeerWatch). A live peer ACKs every keep-alive, so a healthy connection with keep-alives on,
 *  busy or quiet, sends no probe (one with them off probes a quiet peer about once a second); a SIGKILLed peer's host refuses one, and the connection closes then, as a TCP
 *  connection does on the killed process's RST, instead of at the client's silence bound (3 s)
 *  or the idle timeout. A host rate-limits its ICMP answers (Linux: a burst of 6, then about one
 *  a second per destination host, loopback exempt), so of many connections from one host to a
 *  killed peer only the first few hear it this soon; the rest keep to the silence bounds. */
export const QUIC_PEER_PROBE_GRACE_MS = 250;
/** The first gap between two probes of one silence; each next gap is twice the last, up to the
 *  keep-alive interval (at least a second). */
export const QUIC_PEER_PROBE_GAP_MS_MIN = 500;
/** How often a dialed QUIC connection's peer watch reads its count of packets received. */
export const QUIC_PEER_CHECK_INTERVAL_MS = 250;
