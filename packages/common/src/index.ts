export { assert } from './assert.js';
export { crc32 } from './crc32.js';
export { AssertionError, FelixError } from './errors.js';
export type { FelixErrorOptions, RetryClass } from './errors.js';
export { fnv1a64 } from './fnv.js';
export { CHECKSUM_INPUT_BYTES_MAX, POOLED_COPY_BYTES_MAX } from './limits.js';
export { copyBytes, ownBytes } from './bytes.js';
export { isFetchBlockedPort } from './ports.js';
export { errorReason } from './reason.js';
