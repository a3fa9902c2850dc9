/**
 * One FLXI frame per stream: how brokers talk to each other. A request stream carries one
 * request and its answer (QUIC streams and the TLS multiplexer's streams are cheap, and a lost
 * or slow answer then concerns its stream only).
 */
import type { TransportStream } from '@felix/transport';
import { type InternalFrame, InternalFrameDecoder, encodeInternalFrame } from '@felix/wire';

/** Reads one whole frame (the decoder bounds its body); null when the stream ends first. */
export async function readFrame(stream: TransportStream): Promise<InternalFrame | null> {
  const decoder = new InternalFrameDecoder();
  for await (const chunk of stream) {
    const frames = decoder.push(chunk);
    if (frames.length > 0) return frames[0]!;
  }
  return null;
}

/** A frame as bytes again (what the replica server takes). */
export function frameBytes(frame: InternalFrame): Uint8Array {
  return encodeInternalFrame(frame.kind, frame.body);
}
