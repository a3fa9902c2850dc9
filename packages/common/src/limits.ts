/** @felix/common holds no queues or buffers: a bound on checksum inputs, the size up to which
 *  small copies share Node's Buffer pool and how deep a chain of causes is read. */

/** Largest input accepted by the pure checksum helpers in one call (they never allocate). */
export const CHECKSUM_INPUT_BYTES_MAX = 2 ** 31 - 1;

/** Up to this size `ownBytes` carves its memory from Node's shared Buffer pool (Node itself
 *  pools only below half its 8 KiB pool size, so this matches it); larger gets its own. */
export const POOLED_COPY_BYTES_MAX = 4 * 1024;

/** How deep `errorReason` reads a chain of causes (a chain may cycle). */
export const ERROR_CAUSE_DEPTH_MAX = 8;
