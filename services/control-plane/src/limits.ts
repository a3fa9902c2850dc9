/** Named bounds of the control plane, with why each value was chosen. */

/** Longest accepted name: the reference rule (1-128 characters). */
export const NAME_LENGTH_MAX = 128;

/** Page size bounds for every listing; 1000 is the default, 10000 keeps one answer under ~5 MB. */
export const PAGE_LIMIT_DEFAULT = 1000;
export const PAGE_LIMIT_MAX = 10_000;

/** Longest cursor accepted: a base64 key of five names plus a shard fits easily. */
export const CURSOR_CHARS_MAX = 1024;

/** Shards per stream or cache: beyond this one resource dominates a placement pass. */
export const SHARDS_MAX = 1024;

/** Longest default TTL of a cache; matches the broker's CACHE_TTL_MS_MAX (about 1,100 years). */
export const CACHE_TTL_MS_MAX = 2 ** 45;

/** Largest replication factor; matches @felix/router's REPLICATION_FACTOR_MAX. */
export const REPLICATION_FACTOR_MAX = 16;

/** Change rows returned per page (FELIX_CONTROLPLANE_CHANGES_LIMIT default). */
export const CHANGES_LIMIT_DEFAULT = 1000;

/** Change rows kept per feed (FELIX_CONTROLPLANE_CHANGE_RETENTION_MAX_ROWS default); older rows are trimmed and readers resnapshot. */
export const CHANGE_RETENTION_ROWS_DEFAULT = 10_000;

/**
 * Change rows are trimmed when a feed's sequence crosses a multiple of this step (or of the
 * retention, if smaller), so a feed keeps at most retention + step rows and most writes skip the
 * DELETE while they hold the feed's sequence row.
 */
export const CHANGE_TRIM_STEP_ROWS = 256;

/** Longest long poll: under the common 30 s proxy idle timeout. */
export const LONG_POLL_WAIT_MS_MAX = 25_000;

/**
 * While waiting, a long poll re-reads the store at least this often even without a wake-up, so
 * a lost notification (another instance's write, a dropped LISTEN connection) costs at most 1 s.
 */
export const LONG_POLL_REREAD_INTERVAL_MS = 1000;

/**
 * Long polls parked at once. Each holds a socket and a timer; past this bound a poll answers at
 * once with what it has (policy: answer early, counted in felix_controlplane_long_poll_overflow_total).
 */
export const LONG_POLL_WAITERS_MAX = 20_000;

/** Largest request body: registrations with labels are the biggest bodies, well under 64 KiB. */
export const BODY_BYTES_MAX = 64 * 1024;

/**
 * Shards one replica-status request reports, and its body's bound: a broker batches every shard
 * it leads into one request per heartbeat interval, splitting past this many; ~300 bytes per
 * shard with a full replica set keeps 2048 of them under 1 MiB.
 */
export const REPLICA_REPORT_SHARDS_MAX = 2048;
export const REPLICA_REPORT_BODY_BYTES_MAX = 1024 * 1024;

/** Labels per node and their sizes: enough for topology tags, small enough to list 10k nodes. */
export const NODE_LABELS_MAX = 32;
export const NODE_LABEL_CHARS_MAX = 256;

/** Longest address string accepted (host:port, possibly a DNS name). */
export const ADDRESS_CHARS_MAX = 300;

/** Liveness defaults (the reference): heartbeat every 5 s, expiry 15 s, margin L/4. */
export const HEARTBEAT_INTERVAL_MS_DEFAULT = 5000;
export const EXPIRY_TIMEOUT_MS_DEFAULT = 15_000;
export const EXPIRY_SWEEP_INTERVAL_MS_DEFAULT = 2000;

/** Placement runs at least this often besides the passes writes trigger. */
export const RECONCILE_INTERVAL_MS_DEFAULT = 5000;

/**
 * A quorum shard's leadership returns to its preferred broker once that broker has been
 * registered this long (cluster/rebalance.ts; 0 turns it off): long enough that a broker
 * restarted in a rolling restart has caught up, and a flapping one does not pull leaders back.
 */
export const LEADER_REBALANCE_DELAY_MS_DEFAULT = 30_000;

/** Leaderships one placement pass moves back to preferred brokers, at most: each move is a
 *  fence and a brief pause of that shard's writes, so a large cluster spreads them over passes. */
export const LEADER_MOVES_PER_PASS_MAX = 8;

/** Readiness re-checks the store at most once a second and gives it 2 s to answer. */
export const READINESS_CACHE_TTL_MS = 1000;
export const READINESS_TIMEOUT_MS = 2000;

/** Postgres pool size and connect timeout (reference defaults). */
export const POSTGRES_MAX_CONNECTIONS_DEFAULT = 10;
export const POSTGRES_CONNECT_TIMEOUT_MS_DEFAULT = 5000;

/**
 * SQLite transactions committed together (one fsync for the group). 256 bounds how long the
 * first of them waits for the group's commit while still amortising a ~4 ms fsync well.
 */
export const SQLITE_GROUP_COMMIT_MAX = 256;

/** Prepared statements cached per SQLite connection; the store issues a few dozen distinct ones. */
export const SQLITE_STATEMENT_CACHE_MAX = 512;

/** A change deleting a tenant emits one row per cascaded resource; a bound keeps the transaction sane. */
export const CASCADE_ROWS_MAX = 100_000;

/** Rows per multi-row INSERT: keeps each statement under Postgres's 65535-parameter cap (11 × 200). */
export const INSERT_BATCH_ROWS = 200;

/** Rows one feed snapshot may return; a larger catalog is refused rather than buffered whole. */
export const SNAPSHOT_ROWS_MAX = 1_000_000;

/**
 * Rows one auth listing returns at most (policies, bindings, issuers, keys). The authz limits
 * bound what a tenant may hold (1024 roles × 256 policies in theory); a listing past this is cut
 * and says so rather than building a huge answer.
 */
export const AUTH_LIST_ROWS_MAX = 10_000;

/** Signing keys a tenant may hold staged or active (the JWKS size); matches @felix/authz KEYS_PER_TENANT_MAX. */
export const SIGNING_KEYS_PUBLISHED_MAX = 16;

/** Issuers per tenant: a handful of IdPs is normal; the bound keeps exchange lookups small. */
export const IDP_ISSUERS_PER_TENANT_MAX = 32;

/** Live refresh tokens per principal: devices and sessions of one user; older ones must be revoked. */
export const REFRESH_TOKENS_PER_PRINCIPAL_MAX = 1000;

/**
 * How long the guard trusts a tenant's public keys read from the store. Short, because a
 * retired key must stop verifying soon on every instance (this instance forgets at once on its
 * own key changes); long enough that a burst of requests reads the keys once.
 */
export const TENANT_KEYS_CACHE_TTL_MS = 5000;
/** A token naming a key the cache does not hold reads the tenant's keys again, at most this
 *  often per tenant (a key made or a tenant initialized on another instance). */
export const TENANT_KEYS_MISS_REREAD_MS = 1000;

/** Tenants whose keys are cached at once (unknown tenants too, so random `tid`s cannot hammer the store). */
export const TENANT_KEYS_CACHE_ENTRIES_MAX = 4096;

/** Imported private keys kept for signing (one per tenant that signs). */
export const SIGNING_KEYS_CACHE_ENTRIES_MAX = 1024;

/** Lifetime of a control-plane or broker token minted by the control plane (reference: 900 s). */
export const ACCESS_TOKEN_TTL_S_DEFAULT = 900;

/** Shortest bootstrap token accepted: 32 characters, as the reference asks of its static peer tokens. */
export const BOOTSTRAP_TOKEN_CHARS_MIN = 32;

/** Bootstrap body bounds: issuers, admin principals and dev-token permissions per request. */
export const BOOTSTRAP_ISSUERS_MAX = 16;
export const BOOTSTRAP_PRINCIPALS_MAX = 64;

// ---- tokens, OIDC exchange and RBAC routes (src/auth/, issue 21)

/** Longest upstream OIDC token accepted before any parsing (an IdP token with groups fits). */
export const OIDC_TOKEN_BYTES_MAX = 16_384;

/** A JWKS or discovery fetch gives up after this long (the reference's 10 s). */
export const OIDC_FETCH_TIMEOUT_MS = 10_000;

/** An unknown `kid` refetches an issuer's JWKS at most this often (the reference's 30 s). */
export const OIDC_JWKS_COOLDOWN_MS = 30_000;

/** A fetched JWKS is trusted this long before it is fetched again. */
export const OIDC_JWKS_MAX_AGE_MS = 600_000;

/** Largest JWKS or discovery document read; more is refused without parsing. */
export const OIDC_DOCUMENT_BYTES_MAX = 256 * 1024;

/** Remote key sets (one per JWKS URL) kept at once; the oldest is dropped past this. */
export const OIDC_KEY_SETS_MAX = 1024;

/** Audiences one issuer may list. */
export const IDP_AUDIENCES_MAX = 16;

/** Longest issuer, audience, URL or claim name in an issuer's configuration. */
export const IDP_FIELD_CHARS_MAX = 512;

/** IdP groups read from one token; more are refused (a token listing thousands is a mistake). */
export const OIDC_GROUPS_MAX = 256;

/** Longest subject or group name taken from an upstream token. */
export const OIDC_CLAIM_CHARS_MAX = 256;

/** Lifetime of a refresh token (FELIX_REFRESH_TOKEN_TTL_SECONDS): 30 days. */
export const REFRESH_TOKEN_TTL_S_DEFAULT = 30 * 86_400;

/** Permissions or resources one exchange, refresh or delegation may name to narrow its token. */
export const NARROWING_ENTRIES_MAX = 256;

/** Longest refresh token string accepted (`<id>.<secret>`, both base64url). */
export const REFRESH_TOKEN_CHARS_MAX = 256;
/** How long felixctl waits for one control-plane answer before it reports it unreachable. */
export const FELIXCTL_REQUEST_TIMEOUT_MS = 30_000;
/** How much of an answer that is not JSON felixctl quotes in its error. */
export const NOT_JSON_EXCERPT_CHARS = 120;
