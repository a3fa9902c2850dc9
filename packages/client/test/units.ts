// Re-exports for the unit tests: the package's public entry plus internals not exported.
export { BoundedQueue, Publisher, backoffDelayMs } from '@felix/client';
export { brokerError as brokerErrorFor } from '../src/errors.js';
export {
  encodeGetRequest,
  getRequestPrefix,
  readValueAnswer,
} from '../src/projections/get-codec.js';
export { FrameStream } from '../src/protocol/frame-stream.js';
