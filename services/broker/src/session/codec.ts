/**
 * The broker's use of @felix/wire in one place: frame reading with the pre-auth bound, JSON
 * messages, publish batches and acks (event frames are streams/event-frame.ts).
 */
import {
  FLAG_BINARY_PUBLISH_ACK_CODE,
  FLAG_BINARY_PUBLISH_ACK_OFFSET,
  FrameDecoder,
  InboundFrame,
  type Message,
  type PayloadList,
  decodeMessage,
  decodePublishBatchListPieces,
  encodeMessage,
  ERROR_CODE_NUMBERS,
  RETRY_BYTES,
  encodePublishAck,
  frameLayout,
  shardForKey,
} from '@felix/wire';
import type { ErrorCodeName, RetryName } from './refusal.js';

export { InboundFrame };

/**
 * Frames from one client stream, read by @felix/wire's decoder: a frame split across chunks is
 * kept as views of them (no assembly copy), a bad header is refused before its body is held,
 * and the payload bound is raised once the stream authenticates. Before auth a chunk is read
 * one frame at a time (`first`, then `rest`), so frames that follow `auth` in the same read are
 * checked against the bound raised by it; after auth a chunk is read whole (`push`).
 */
export class FrameReader {
  private decoder: FrameDecoder;

  constructor(maxPayloadBytes: number) {
    // Compacting: a held piece costs at most twice its bytes, so the connection's partial-frame
    // budget, which counts held bytes, bounds memory (a byte cannot pin a whole read buffer).
    this.decoder = new FrameDecoder({ maxPayloadBytes, compactHeldPieces: true });
  }

  push(chunk: Uint8Array): InboundFrame[] {
    return this.decoder.pushPieces(chunk);
  }

  /** Feeds a chunk and reads only its first frame (null when it completes none: the chunk is
   *  then used up); `rest` reads the others. */
  first(chunk: Uint8Array): InboundFrame | null {
    this.decoder.feed(chunk);
    return this.decoder.next();
  }

  /** The frames left in the chunk `first` was given, read under the bound now in force. */
  rest(): InboundFrame[] {
    const frames: InboundFrame[] = [];
    for (let f = this.decoder.next(); f !== null; f = this.decoder.next()) frames.push(f);
    return frames;
  }

  setMax(maxPayloadBytes: number): void {
    this.decoder.setMaxPayloadBytes(maxPayloadBytes);
  }

  /** True while an incomplete frame (header or body) is held. */
  get partial(): boolean {
    return !this.decoder.idle;
  }

  /** Bytes held for the incomplete frame (its header, or its payload so far): what the
   *  connection's partial-frame budget counts. */
  get heldBytes(): number {
    return this.decoder.bufferedBytes;
  }

  /** Lets go of what is held for a partial frame, once the stream is being ended over it. */
  drop(): void {
    this.decoder = new FrameDecoder({ maxPayloadBytes: 0 });
  }
}

export const layoutOf = frameLayout;
export const jsonFrame = (msg: Message): Uint8Array => encodeMessage(msg);
export const readMessage = (payload: Uint8Array): Message => decodeMessage(payload);

export interface PublishIn {
  tenant: string;
  namespace: string;
  stream: string;
  key: Uint8Array | undefined;
  /** The frame's checked payload list, unsplit: an event batch carries the same bytes. */
  payloads: PayloadList;
  requestId: number | undefined;
}

export function readPublish(frame: InboundFrame): PublishIn {
  const b = decodePublishBatchListPieces(frame.flags, frame.pieces, frame.length);
  return {
    tenant: b.tenantId,
    namespace: b.namespace,
    stream: b.stream,
    key: b.key,
    payloads: b.payloads,
    requestId: b.requestId,
  };
}

export interface AckOut {
  ok: boolean;
  requestId: number;
  message?: string;
  code?: ErrorCodeName;
  retry?: RetryName;
  offset?: number | undefined;
}

/** A binary publish ack using only the modifiers the client negotiated. */
export function ackFrame(negotiated: number, ack: AckOut): Uint8Array {
  const withOffset =
    ack.ok && ack.offset !== undefined && (negotiated & FLAG_BINARY_PUBLISH_ACK_OFFSET) !== 0;
  const withCode =
    !ack.ok && ack.code !== undefined && (negotiated & FLAG_BINARY_PUBLISH_ACK_CODE) !== 0;
  return encodePublishAck({
    status: ack.ok ? 'ok' : 'error',
    requestId: ack.requestId,
    message: ack.message ?? '',
    ...(withCode
      ? { code: ERROR_CODE_NUMBERS[ack.code!], retry: RETRY_BYTES[ack.retry ?? 'fatal'] }
      : {}),
    ...(withOffset ? { offset: ack.offset } : {}),
  });
}

export function routeKey(key: Uint8Array, shards: number, routing: 'modulo' | 'jump_hash'): number {
  return shardForKey(key, shards, routing);
}
