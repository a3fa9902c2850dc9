/**
 * Frames read from one transport stream, one at a time on demand: the next chunk is pulled only
 * when the frames already decoded are used up, so a slow consumer backs off the broker.
 */
import type { TransportStream } from '@felix/transport';
import { FrameDecoder } from '@felix/wire';
import { FRAME_BYTES_MAX } from '../limits.js';

export interface InFrame {
  flags: number;
  payload: Uint8Array;
}

export class FrameStream {
  private readonly decoder = new FrameDecoder({ maxPayloadBytes: FRAME_BYTES_MAX });
  private readonly iterator: AsyncIterator<Uint8Array>;
  private frames: InFrame[] = [];
  private index = 0;

  constructor(readonly stream: TransportStream) {
    this.iterator = stream[Symbol.asyncIterator]();
  }

  /** The next frame, or null at the peer's clean half-close. Throws on reset or bad bytes. */
  async next(): Promise<InFrame | null> {
    while (this.index >= this.frames.length) {
      const r = await this.iterator.next();
      if (r.done) return null;
      this.frames = this.decoder.push(r.value);
      this.index = 0;
    }
    return this.frames[this.index++]!;
  }

  /** Stops reading (the iterator's return lets the transport release the stream). */
  async release(): Promise<void> {
    await this.iterator.return?.();
  }
}
