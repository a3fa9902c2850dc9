/** @felix/common holds no queues or buffers; its only bound is on checksum inputs. */

/** Largest input accepted by the pure checksum helpers in one call (they never allocate). */
export const CHECKSUM_INPUT_BYTES_MAX = 2 ** 31 - 1;
