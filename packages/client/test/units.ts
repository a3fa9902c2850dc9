// Re-exports for the unit tests: the package's public entry plus internals not exported.
export {
  BoundedQueue,
  PUBLISHER_UNACKED_BYTES_HIGH,
  PUBLISHER_UNACKED_RECORDS_HIGH,
  PUBLISHER_UNACKED_RECORDS_MAX,
  Publisher,
  PublisherFullError,
  backoffDelayMs,
} from '@felix/client';
export { brokerError as brokerErrorFor } from '../src/errors.js';
export { FrameStream } from '../src/protocol/frame-stream.js';
export { ShardReader } from '../src/subscription.js';
export type { ReaderHost } from '../src/subscription.js';
export { RESUBSCRIBE_BASE_MS, RESUBSCRIBE_DELAY_MS_MAX } from '../src/limits.js';
