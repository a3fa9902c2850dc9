/**
 * Feature bits (which request types a peer implements), advertised in `auth` /
 * `auth_ok` as a u32 low word plus an optional `_hi` word. A separate numbering space from
 * frame flags; the two must never be mixed.
 */

export const FEATURE_TOPOLOGY = 0x0000_0001;
export const FEATURE_REDIRECT = 0x0000_0002;
export const FEATURE_CACHE_DELETE = 0x0000_0004;
export const FEATURE_CONSUMER_GROUP = 0x0000_0008;
export const FEATURE_GROUP_DEAD_LETTERS = 0x0000_0010;
export const FEATURE_STREAM_SHARDS = 0x0000_0020;
export const FEATURE_CACHE_WATCH = 0x0000_0040;
export const FEATURE_CACHE_WATCH_RETAINED = 0x0000_0080;
export const FEATURE_COUNTERS = 0x0000_0100;
export const FEATURE_IDEMPOTENT_PRODUCER = 0x0000_0200;
export const FEATURE_CACHE_SHARDS = 0x0000_0400;
export const FEATURE_ERROR_CODES = 0x0000_0800;
export const FEATURE_SHARD_MOVED = 0x0000_1000;
export const FEATURE_UNSUPPORTED = 0x0000_2000;
export const FEATURE_SEQUENCE_REUSED = 0x0000_4000;
export const FEATURE_PUBLISH_PIPELINE = 0x0000_8000;
export const FEATURE_ATOMIC_COMMIT = 0x0001_0000;
export const FEATURE_STREAM_PUBLISH_WINDOW = 0x0002_0000;
export const FEATURE_SHARD_OWNERS = 0x0004_0000;
export const FEATURE_ACK_ON_COMMIT = 0x0008_0000;
export const FEATURE_GROUP_CONSUMER = 0x0010_0000;
export const FEATURE_SUBSCRIPTION_LAGGED = 0x0020_0000;
export const FEATURE_GROUP_SKIPPED = 0x0040_0000;
export const FEATURE_GROUP_PUBLISHER = 0x0080_0000;
export const FEATURE_GROUP_ADMIN = 0x0100_0000;
export const FEATURE_CACHE_CONDITIONAL = 0x0200_0000;
export const FEATURE_RECORD_TIMESTAMPS = 0x0400_0000;
export const FEATURE_GROUP_CLAIM_CONTROL = 0x0800_0000;
export const FEATURE_PUBLISH_CONDITIONAL = 0x1000_0000;
export const FEATURE_STREAM_READ = 0x2000_0000;
export const FEATURE_SUBSCRIBE_QUEUE = 0x4000_0000;
/** Not a feature: marks that a `_hi` word follows and that the sender reads one. */
export const FEATURE_EXTENDED = 0x8000_0000;

/** Bit 0 of the `_hi` word (bit 32 of the set): `shard_inspect`, `subscriptions_list`. */
export const FEATURE_HI_INSPECT = 0x0000_0001;
/**
 * Bit 1 of the `_hi` word (bit 33 of the set): `group_ack_batch` (many offsets in one request,
 * answered `group_acked`). A Felix extension; plain `group_ack` stays fully supported.
 */
export const FEATURE_HI_GROUP_ACK_BATCH = 0x0000_0002;
/**
 * Bit 2 of the `_hi` word (bit 34 of the set): the broker answers `group_poll` with a binary
 * `group_records` frame (flag 0x8000) when the flag was negotiated too. A Felix extension; the
 * JSON answer stays fully served to a client that offered neither.
 */
export const FEATURE_HI_GROUP_RECORDS_BINARY = 0x0000_0004;
/**
 * Bit 3 of the `_hi` word (bit 35 of the set): `group_nack_batch` (many offsets handed back in
 * one request, answered `group_nacked`). A Felix extension; plain `group_nack` stays fully
 * supported.
 */
export const FEATURE_HI_GROUP_NACK_BATCH = 0x0000_0008;
/**
 * Bit 4 of the `_hi` word (bit 36 of the set): `reauth` (a fresh token for a live connection,
 * answered `reauth_ok`). A Felix extension; without it a client reconnects to renew a token.
 */
export const FEATURE_HI_REAUTH = 0x0000_0010;
/**
 * Bit 5 of the `_hi` word (bit 37 of the set): the binary cache exchange (flag word 0x8001,
 * binary/cache.ts). A Felix extension: a client that negotiated it may send `cache_get` and
 * `cache_put` in binary, and the broker answers its gets and puts in binary; the JSON forms stay
 * fully served to a client that did not.
 */
export const FEATURE_HI_CACHE_BINARY = 0x0000_0020;
/**
 * Bit 6 of the `_hi` word (bit 38 of the set): the binary group exchange (flag word 0x8002,
 * binary/group-requests.ts). A Felix extension: a client that negotiated it may send
 * `group_poll` and `group_ack_batch` in binary, and the broker answers its `group_ack_batch` with
 * a binary `group_acked`; the JSON forms stay fully served to a client that did not.
 */
export const FEATURE_HI_GROUP_BINARY = 0x0000_0040;
/**
 * Bit 7 of the `_hi` word (bit 39 of the set): `release` on `group_nack_batch`. A Felix
 * extension: a consume loop hands back records it polled ahead but never gave the application
 * (a `break` out of the loop), and those deliveries do not count toward the attempt bound; a
 * broker without it counts them as nacks, as the reference does.
 */
export const FEATURE_HI_GROUP_RELEASE = 0x0000_0080;
/**
 * Bit 8 of the `_hi` word (bit 40 of the set): `after` and `limit` on `group_dead_letters` and
 * `more` on its `group_dead_letter_list`, so a group's dead letters are listed page by page past
 * the first 1,000. A Felix extension; a broker without it ignores both fields and answers the
 * lowest 1,000, so a client sends them only to a broker that advertised the bit.
 */
export const FEATURE_HI_GROUP_DEAD_LETTER_PAGES = 0x0000_0100;
/**
 * Bit 9 of the `_hi` word (bit 41 of the set): the broker half-closes a request stream only
 * after it has answered every request it applied there, and applies nothing it reads after (a
 * stopping broker's notice, as HTTP/2's GOAWAY is). A client that negotiated it takes the
 * requests still unanswered at that end as not applied. A Felix extension; without it a stream's
 * end says nothing of what is waiting, which may have been applied.
 */
export const FEATURE_HI_STREAM_END_NOTICE = 0x0000_0200;
