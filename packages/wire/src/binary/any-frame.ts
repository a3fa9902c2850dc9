/**
 * One entry point for a received client frame: picks the layout from the flags and decodes
 * the payload with the matching codec.
 */
import { frameLayout } from '../flags.js';
import type { Frame } from '../frame/header.js';
import { decodeMessage } from '../json/message-codec.js';
import type { Message } from '../json/message-types.js';
import { type EventBatch, decodeEventBatch } from './event-batch.js';
import { type CacheRequest, CacheFrameReader } from './cache.js';
import { type GroupRequest, GroupFrameReader } from './group-requests.js';
import { decodeGroupRecords } from './group-records.js';
import { type PublishAck, decodePublishAck } from './publish-ack.js';
import { type PublishBatch, decodePublishBatch } from './publish-batch.js';

export type DecodedFrame =
  | { layout: 'json'; message: Message }
  | { layout: 'publish_batch'; flags: number; batch: PublishBatch }
  | { layout: 'publish_ack'; flags: number; ack: PublishAck }
  | { layout: 'event_batch'; flags: number; batch: EventBatch }
  | { layout: 'group_records'; message: Message }
  | { layout: 'cache'; message: CacheRequest }
  | { layout: 'group'; message: GroupRequest };

/** Decodes any client frame. Throws only `WireError`. */
export function decodeFramePayload(frame: Frame): DecodedFrame {
  const { flags, payload } = frame;
  switch (frameLayout(flags)) {
    case 'json':
      return { layout: 'json', message: decodeMessage(payload) };
    case 'publish_batch':
      return { layout: 'publish_batch', flags, batch: decodePublishBatch(flags, payload) };
    case 'publish_ack':
      return { layout: 'publish_ack', flags, ack: decodePublishAck(flags, payload) };
    case 'event_batch':
      return { layout: 'event_batch', flags, batch: decodeEventBatch(flags, payload) };
    case 'group_records':
      return { layout: 'group_records', message: decodeGroupRecords(flags, payload) };
    case 'cache':
      // A client frame: a request (an answer goes the other way and names no key).
      return { layout: 'cache', message: new CacheFrameReader().request(payload) };
    case 'group':
      // A client frame: a request (the `group_acked` answer goes the other way).
      return { layout: 'group', message: new GroupFrameReader().request(payload) };
  }
}
