/** Bounds of @felix/authz: token sizes, clock skew, permission and RBAC sizes. */

/**
 * Clock skew tolerated when checking `exp`, `nbf` and `iat`, in seconds. Brokers and the control
 * plane run NTP; 30 s covers a drifting host without stretching a 900 s token noticeably.
 */
export const TOKEN_CLOCK_SKEW_S = 30;

/**
 * Longest lifetime (`exp - iat`) a token may have, in seconds. Access tokens live 900 s; a day
 * bounds how long a leaked token stays useful even when a caller asks for more.
 */
export const TOKEN_LIFETIME_S_MAX = 86_400;

/**
 * Largest token accepted before any parsing. A token with 256 permissions of typical length is
 * about 12 KiB; anything longer is refused without decoding it.
 */
export const TOKEN_BYTES_MAX = 16_384;

/** Most permissions one token may carry; bounds the compile work done at auth. */
export const TOKEN_PERMISSIONS_MAX = 256;

/** Longest `kid` header accepted: a JWK thumbprint is 43 characters. */
export const KID_BYTES_MAX = 128;

/** Longest `sub` claim: a principal id (hex SHA-256) is 64 characters. */
export const SUBJECT_BYTES_MAX = 256;

/**
 * Longest name segment (tenant, namespace, stream, cache, group, node id); the same rule as the
 * control plane's catalog names (1–128 characters).
 */
export const NAME_BYTES_MAX = 128;

/** Longest permission string: an action, a kind and four full-length names fit in 640 bytes. */
export const PERMISSION_BYTES_MAX = 640;

/** Most roles one tenant holds; bounds a principal's resolution work. */
export const ROLES_PER_TENANT_MAX = 1024;

/** Most policies (permissions) on one role. */
export const POLICIES_PER_ROLE_MAX = 256;

/** Most bindings (subject → role) one tenant holds. */
export const BINDINGS_PER_TENANT_MAX = 65_536;

/** Most keys one tenant's in-memory key set holds: active, staged and retiring keys, with room. */
export const KEYS_PER_TENANT_MAX = 16;

/**
 * Most entries in a verified-token cache. Each holds a token string (under TOKEN_BYTES_MAX) and
 * its compiled permissions; 10,000 bounds the cache near 100 MiB in the worst case.
 */
export const VERIFIED_TOKEN_CACHE_ENTRIES_MAX = 10_000;
