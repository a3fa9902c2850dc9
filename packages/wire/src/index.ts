export * from './errors.js';
export * from './limits.js';
export * from './flags.js';
export * from './features.js';
export * from './error-codes.js';
export * from './negotiation.js';
export { shardForKey, fnv1a64 as routingHash64 } from './routing.js';
export {
  asciiBytes,
  asciiText,
  bytesStartWith,
  decimalDigits,
  utf8Length,
  writeDecimal,
} from './bytes/ascii.js';
export { GetRequestReader, encodeGetRequest, getRequestPrefix } from './fast/cache-get.js';
export type { GetPrefix, SentGetRequest } from './fast/cache-get.js';
export { readValueAnswer, valueAnswerFrame, valueAnswerHead } from './fast/cache-value.js';
export {
  PutRequestReader,
  encodePutRequest,
  okAnswerFrame,
  putRequestPrefix,
  readOkAnswer,
} from './fast/cache-put.js';
export type { PutPrefix } from './fast/cache-put.js';
export {
  FRAME_MAGIC,
  FRAME_VERSION,
  decodeFrame,
  decodeFrameHeader,
  encodeFrame,
  writeFrameHeader,
} from './frame/header.js';
export type { Frame, FrameHeader } from './frame/header.js';
export { InboundFrame, PiecesDecoder, joinPieces } from './frame/decoder.js';
export type { HeaderCheck } from './frame/decoder.js';
export { FrameDecoder } from './frame/frame-decoder.js';
export type { FrameDecoderOptions } from './frame/frame-decoder.js';
export {
  decodeMessage,
  encodeMessage,
  encodeMessagePayload,
  messageJson,
} from './json/message-codec.js';
export { MESSAGE_TYPES } from './json/message-specs.js';
export { base64Decode, base64Encode } from './json/base64.js';
export type * from './json/message-types.js';
export {
  decodePublishBatch,
  decodePublishBatchList,
  decodePublishBatchListPieces,
  encodePublishBatch,
  publishBatchFlags,
} from './binary/publish-batch.js';
export type { BinaryAckMode, PublishBatch, PublishBatchList } from './binary/publish-batch.js';
export { payloadListViews } from './binary/strings.js';
export type { PayloadList } from './binary/strings.js';
export { decodePublishAck, encodePublishAck, publishAckFlags } from './binary/publish-ack.js';
export type { AckOwner, PublishAck } from './binary/publish-ack.js';
export {
  decodeEventBatch,
  decodeEventBatchPieces,
  encodeEventBatch,
  encodeEventBatchHead,
  eventBatchFlags,
} from './binary/event-batch.js';
export type { EventBatch } from './binary/event-batch.js';
export {
  decodeGroupRecords,
  encodeGroupRecordsFrame,
  fitsBinaryGroupRecords,
} from './binary/group-records.js';
export {
  CacheFrameReader,
  cacheScopeBytes,
  decodeCacheAnswer,
  encodeCacheGet,
  encodeCacheOk,
  encodeCachePut,
  encodeCacheValue,
} from './binary/cache.js';
export type { CacheAnswer, CacheRequest } from './binary/cache.js';
export {
  GROUP_KIND_ACK,
  GROUP_KIND_ACKED,
  GROUP_KIND_POLL,
  GroupFrameReader,
  decodeGroupAcked,
  encodeGroupAck,
  encodeGroupAcked,
  encodeGroupPoll,
  fitsBinaryGroupAcked,
  groupScopeBytes,
} from './binary/group-requests.js';
export type { GroupRequest, PollAsk } from './binary/group-requests.js';
export { decodeFramePayload } from './binary/any-frame.js';
export type { DecodedFrame } from './binary/any-frame.js';
export {
  INTERNAL_MAGIC,
  INTERNAL_VERSION,
  InternalFrameDecoder,
  encodeInternalFrame,
} from './internal/header.js';
export type { InternalFrame } from './internal/header.js';
export { batchChecksum } from './internal/body.js';
export type { ShardRef } from './internal/body.js';
export {
  CACHE_OP,
  FORWARD_ACK,
  INTERNAL_CAPABILITY,
  INTERNAL_ERROR,
  INTERNAL_KIND,
  INTERNAL_RETRYABLE_ERRORS,
  REPLICA_LOG,
  REPLICATE_MARK,
  decodeInternalMessage,
  encodeInternalMessage,
} from './internal/messages.js';
export type {
  ForwardCacheOpBody,
  ForwardPublishBody,
  InternalKindName,
  InternalMessage,
} from './internal/messages.js';
export { VECTOR_KINDS, checkVector, summaryLine } from './vectors/check.js';
export type { VectorResult } from './vectors/check.js';
