/**
 * The one write path of a stream: frames pushed during a turn leave together at its end (on the
 * client's TurnBatcher), in push order, as one write when they are small together
 * (WRITE_COALESCE_BYTES_MAX) or as written frames one after another otherwise (a large frame is
 * never copied). A turn holds at most TURN_WRITE_BYTES_MAX (plus the frame that would pass it):
 * past it the frames so far are written at once, in order, and the turn goes on gathering.
 * A failed write is the stream's failure: `onError` hears it once.
 */
import type { TransportStream } from '@felix/transport';
import { TimeoutError } from '../errors.js';
import { TURN_WRITE_BYTES_MAX, WRITE_COALESCE_BYTES_MAX } from '../limits.js';
import { type FramePool, framePool } from './frame-pool.js';
import type { TurnBatcher } from './turn-batcher.js';

/** The answer of an unacked publish: written, no offset. Shared, never mutated. */
export const WRITTEN: { offset: number | undefined } = Object.freeze({ offset: undefined });

interface Written {
  promise: Promise<{ offset: number | undefined }>;
  resolve(v: { offset: number | undefined }): void;
  reject(err: unknown): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class StreamWriter {
  private parts: Uint8Array[] = [];
  private partsBytes = 0;
  private queued = false;
  /** The promise of the frames pushed since the last flush, made when a caller asks for it. */
  private written: Written | null = null;
  private failure: unknown = null;
  /** Frames pushed, and frames handed to the stream (written or being written), ever. */
  private pushedCount = 0;
  private handedCount = 0;
  /**
   * Buffers for large frames, where the stream copies what it writes: an encoder fills
   * `pool.take(size)` and the writer gives the buffer back once the frame's write settled (or
   * once it was copied into a joined write). Null where a write may outlive its promise (TLS).
   */
  readonly pool: FramePool | null;

  constructor(
    private readonly stream: TransportStream,
    private readonly turn: TurnBatcher,
    private readonly onError: (err: unknown) => void,
  ) {
    this.pool = stream.copiesWrites === true ? framePool : null;
  }

  /** Bytes of frames held for the end of this turn (at most TURN_WRITE_BYTES_MAX plus one). */
  get heldBytes(): number {
    return this.partsBytes;
  }

  /** Frames pushed so far: the next frame pushed is frame number `pushed`. */
  get pushed(): number {
    return this.pushedCount;
  }

  /**
   * Frames handed to the stream so far (frame numbers below it): the bytes of one may have
   * reached the peer; one at or above it never went out, and never will once the writer failed.
   */
  get handed(): number {
    return this.handedCount;
  }

  /** Queues `frame` for the end of this turn. */
  push(frame: Uint8Array): void {
    // Written before `frame` joins: a caller's `whenWritten` right after this push covers it.
    if (this.partsBytes > 0 && this.partsBytes + frame.byteLength > TURN_WRITE_BYTES_MAX) {
      this.writeOut();
    }
    this.parts.push(frame);
    this.partsBytes += frame.byteLength;
    this.pushedCount++;
    if (!this.queued) {
      this.queued = true;
      this.turn.atTurnEnd(this.flush);
    }
  }

  /**
   * Resolves with WRITTEN once the frames pushed so far (an unacked publish to `stream` among
   * them) are accepted by the stream; one promise and at most one timer for every caller of the
   * turn. Past `timeoutMs` it fails with a TimeoutError of unknown outcome (the bytes may still
   * go out).
   */
  whenWritten(timeoutMs: number, stream: string): Promise<{ offset: number | undefined }> {
    if (this.failure !== null) return Promise.reject(this.failure);
    let w = this.written;
    if (w === null) {
      let resolve!: Written['resolve'];
      let reject!: Written['reject'];
      const promise = new Promise<{ offset: number | undefined }>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      w = { promise, resolve, reject, timer: undefined };
      const ww = w;
      w.timer = setTimeout(() => {
        const what = `the ack of a publish to ${stream}`;
        ww.reject(new TimeoutError(what, timeoutMs, 'unknown_outcome'));
      }, timeoutMs);
      this.written = w;
    }
    return w.promise;
  }

  private readonly flush = (): void => {
    this.queued = false;
    this.writeOut();
  };

  /** Writes the frames pushed so far and settles the promise of their callers once written. */
  private writeOut(): void {
    const parts = this.parts;
    const n = parts.length;
    const w = this.written;
    this.written = null;
    if (n === 0) {
      if (w !== null) settle(w, null);
      return;
    }
    const bytes = this.partsBytes;
    this.parts = [];
    this.partsBytes = 0;
    this.handedCount += n;
    if (
      n === 1 &&
      w === null &&
      this.stream.writeNow !== undefined &&
      !this.pool?.owns(parts[0]!)
    ) {
      // One frame nobody waits on (a request): accepted at once, it costs no promise.
      this.stream.writeNow(parts[0]!)?.catch(this.failed);
      return;
    }
    const done = n === 1 ? this.writeOne(parts[0]!) : this.writeRuns(parts, bytes);
    if (w === null) done.catch(this.failed);
    else
      done.then(
        () => settle(w, null),
        (err: unknown) => {
          settle(w, err);
          this.failed(err);
        },
      );
  }

  /**
   * Writes `parts` as runs joined up to WRITE_COALESCE_BYTES_MAX (a part larger than that goes
   * alone, uncopied); the transport keeps writes in call order, so only the last is awaited.
   */
  private writeRuns(parts: Uint8Array[], bytes: number): Promise<void> {
    if (bytes <= WRITE_COALESCE_BYTES_MAX)
      return this.stream.write(joined(parts, 0, parts.length, bytes));
    let from = 0;
    let runBytes = 0;
    let last: Promise<void> | undefined;
    for (let i = 0; i <= parts.length; i++) {
      const size = i < parts.length ? parts[i]!.byteLength : 0;
      if (i < parts.length && runBytes + size <= WRITE_COALESCE_BYTES_MAX) {
        runBytes += size;
        continue;
      }
      if (i > from) {
        last?.catch(this.failed);
        if (i - from === 1) last = this.writeOne(parts[from]!);
        else {
          last = this.stream.write(joined(parts, from, i, runBytes));
          // Copied into the joined write: the parts' buffers are free now.
          if (this.pool !== null) for (let k = from; k < i; k++) this.pool.give(parts[k]!);
        }
      }
      from = i;
      runBytes = size;
    }
    return last ?? Promise.resolve();
  }

  /** Writes one frame, giving a pooled frame's buffer back once the stream has copied it. */
  private writeOne(frame: Uint8Array): Promise<void> {
    const done = this.stream.write(frame);
    const pool = this.pool;
    if (pool?.owns(frame)) {
      const giveBack = (): void => pool.give(frame);
      done.then(giveBack, giveBack);
    }
    return done;
  }

  /**
   * Fails the writer from outside (its stream's owner gave up on it): frames still held are
   * dropped unwritten, and `onError` hears `err` as it would a failed write.
   */
  abandon(err: unknown): void {
    this.failed(err);
  }

  private readonly failed = (err: unknown): void => {
    if (this.failure !== null) return;
    this.failure = err;
    // Never written: nothing reads them.
    if (this.pool !== null) for (const p of this.parts) this.pool.give(p);
    this.parts = [];
    this.partsBytes = 0;
    const w = this.written;
    this.written = null;
    if (w !== null) settle(w, err);
    this.onError(err);
  };
}

/** Ends a turn's wait: written (`err` null) or failed. */
function settle(w: Written, err: unknown): void {
  clearTimeout(w.timer);
  if (err === null) w.resolve(WRITTEN);
  else w.reject(err);
}

function joined(parts: Uint8Array[], from: number, to: number, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (let i = from; i < to; i++) {
    out.set(parts[i]!, at);
    at += parts[i]!.byteLength;
  }
  return out;
}
