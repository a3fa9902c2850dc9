/**
 * Frame flag bits (the `flags` u16 of an FLX1 header) and the rule for which combinations
 * name a layout. Flags describe how a payload is laid out; request types are features
 * (features.ts), a separate numbering space.
 */
import { InvalidFlagCombinationError, UnknownFlagsError } from './errors.js';

export const FLAG_BINARY_PUBLISH_BATCH = 0x0001;
export const FLAG_BINARY_EVENT_BATCH = 0x0002;
export const FLAG_BINARY_EVENT_BATCH_SHARED = 0x0004;
export const FLAG_BINARY_PUBLISH_ACKED = 0x0008;
export const FLAG_BINARY_PUBLISH_ACK = 0x0010;
export const FLAG_EVENT_BATCH_OFFSETS = 0x0020;
export const FLAG_BINARY_PUBLISH_KEYED = 0x0040;
export const FLAG_BINARY_PUBLISH_ACK_OWNER = 0x0080;
export const FLAG_BINARY_PUBLISH_IDEMPOTENT = 0x0100;
export const FLAG_BINARY_PUBLISH_ACK_CODE = 0x0200;
export const FLAG_BINARY_PUBLISH_ACK_DETAIL = 0x0400;
export const FLAG_EVENT_BATCH_SKIPPED = 0x0800;
export const FLAG_BINARY_PUBLISH_ACK_OFFSET = 0x1000;
export const FLAG_EVENT_BATCH_PUBLISHER = 0x2000;
export const FLAG_EVENT_BATCH_TIMESTAMPS = 0x4000;
/**
 * A Felix extension: a `group_records` answer in the binary layout of binary/group-records.ts
 * (broker to client only, and only when both sides offered this flag). The last free bit, so it
 * names a layout only alone: 0x8000 together with any other bit is reserved for further
 * extension layouts and refused today.
 */
export const FLAG_BINARY_GROUP_RECORDS = 0x8000;
/**
 * A Felix extension in 0x8000's reserved space: the whole word 0x8001 names the binary cache
 * exchange of binary/cache.ts (`cache_get`, `cache_put` and their answers), used only when both
 * sides negotiated FEATURE_HI_CACHE_BINARY. Not a bit to offer in `client_flags`: the feature
 * alone negotiates it.
 */
export const FLAG_BINARY_CACHE = 0x8001;
/**
 * The flag word 0x8002 (0x8000's reserved space, as 0x8001): the binary group exchange of
 * binary/group-requests.ts (`group_poll` and `group_ack_batch` requests, the `group_acked`
 * answer), used only when both sides negotiated FEATURE_HI_GROUP_BINARY. Not a bit to offer.
 */
export const FLAG_BINARY_GROUP = 0x8002;

/** Every bit this codec understands; anything else is rejected. */
export const KNOWN_FLAGS = 0xffff;

/** Frozen: what a peer that advertised nothing is assumed to parse. */
export const ORIGINAL_V1_FLAGS =
  FLAG_BINARY_PUBLISH_BATCH | FLAG_BINARY_EVENT_BATCH | FLAG_BINARY_EVENT_BATCH_SHARED;

const PUBLISH_MODIFIERS =
  FLAG_BINARY_PUBLISH_ACKED | FLAG_BINARY_PUBLISH_KEYED | FLAG_BINARY_PUBLISH_IDEMPOTENT;
const ACK_MODIFIERS =
  FLAG_BINARY_PUBLISH_ACK_OWNER |
  FLAG_BINARY_PUBLISH_ACK_CODE |
  FLAG_BINARY_PUBLISH_ACK_DETAIL |
  FLAG_BINARY_PUBLISH_ACK_OFFSET;
const EVENT_MODIFIERS =
  FLAG_EVENT_BATCH_OFFSETS |
  FLAG_EVENT_BATCH_SKIPPED |
  FLAG_EVENT_BATCH_PUBLISHER |
  FLAG_EVENT_BATCH_TIMESTAMPS;

/** Which payload layout a valid flag word selects. */
export type FrameLayout =
  | 'json'
  | 'publish_batch'
  | 'publish_ack'
  | 'event_batch'
  | 'group_records'
  | 'cache'
  | 'group';

/**
 * Checks a flag word names exactly one layout with only that layout's modifiers, and
 * returns the layout. Unknown bits are `UnknownFlagsError`; known bits in an undefined
 * combination are `InvalidFlagCombinationError`. Pure; needs only the header.
 */
export function frameLayout(flags: number): FrameLayout {
  const unknown = flags & ~KNOWN_FLAGS & 0xffff;
  if (unknown !== 0 || flags > 0xffff || flags < 0) {
    throw new UnknownFlagsError(flags, unknown || flags);
  }
  if (flags === 0) return 'json';
  if (flags & FLAG_BINARY_GROUP_RECORDS) {
    if (flags === FLAG_BINARY_CACHE) return 'cache';
    if (flags === FLAG_BINARY_GROUP) return 'group';
    if (flags !== FLAG_BINARY_GROUP_RECORDS) {
      throw new InvalidFlagCombinationError(flags, '0x8000 with another bit is reserved');
    }
    return 'group_records';
  }
  if (flags & FLAG_BINARY_PUBLISH_BATCH) return publishLayout(flags);
  if (flags & FLAG_BINARY_PUBLISH_ACK) return ackLayout(flags);
  if (flags & (FLAG_BINARY_EVENT_BATCH | FLAG_BINARY_EVENT_BATCH_SHARED)) return eventLayout(flags);
  throw new InvalidFlagCombinationError(flags, 'modifier bits without a layout bit');
}

function publishLayout(flags: number): FrameLayout {
  const rest = flags & ~FLAG_BINARY_PUBLISH_BATCH;
  if (rest & ~PUBLISH_MODIFIERS) {
    throw new InvalidFlagCombinationError(flags, 'publish batch mixed with another layout');
  }
  if (flags & FLAG_BINARY_PUBLISH_IDEMPOTENT && !(flags & FLAG_BINARY_PUBLISH_ACKED)) {
    throw new InvalidFlagCombinationError(flags, '0x0100 idempotent requires 0x0008 acked');
  }
  return 'publish_batch';
}

function ackLayout(flags: number): FrameLayout {
  const rest = flags & ~FLAG_BINARY_PUBLISH_ACK;
  if (rest & ~ACK_MODIFIERS) {
    throw new InvalidFlagCombinationError(flags, 'publish ack mixed with another layout');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_DETAIL && !(flags & FLAG_BINARY_PUBLISH_ACK_CODE)) {
    throw new InvalidFlagCombinationError(flags, '0x0400 detail requires 0x0200 code');
  }
  if (flags & FLAG_BINARY_PUBLISH_ACK_CODE && flags & FLAG_BINARY_PUBLISH_ACK_OFFSET) {
    throw new InvalidFlagCombinationError(flags, '0x0200 (failed) with 0x1000 (succeeded)');
  }
  return 'publish_ack';
}

function eventLayout(flags: number): FrameLayout {
  const legacy = flags & FLAG_BINARY_EVENT_BATCH;
  const shared = flags & FLAG_BINARY_EVENT_BATCH_SHARED;
  if (legacy && shared) {
    throw new InvalidFlagCombinationError(flags, 'both legacy 0x0002 and shared 0x0004');
  }
  const rest = flags & ~(legacy | shared);
  if (rest & ~EVENT_MODIFIERS) {
    throw new InvalidFlagCombinationError(flags, 'event batch mixed with another layout');
  }
  if (flags & FLAG_EVENT_BATCH_SKIPPED && !(flags & FLAG_EVENT_BATCH_OFFSETS)) {
    throw new InvalidFlagCombinationError(flags, '0x0800 skipped requires 0x0020 offsets');
  }
  return 'event_batch';
}
