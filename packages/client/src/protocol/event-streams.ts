/**
 * The uni streams a broker opens to this client, one per subscription or watch: each starts
 * with `event_stream_hello` naming the id the client reserved for it. A stream whose reservation
 * is not made yet waits among the unclaimed (at most UNCLAIMED_EVENT_STREAMS_MAX); anything else
 * (one whose reservation was dropped, too) is reset.
 */
import type { Connection, TransportStream } from '@felix/transport';
import { decodeMessage } from '@felix/wire';
import { EventStreamTimeoutError, ProtocolError } from '../errors.js';
import { EVENT_STREAM_WAIT_MS_MAX, UNCLAIMED_EVENT_STREAMS_MAX } from '../limits.js';
import { abortable } from '../util/abortable.js';
import { FrameStream } from './frame-stream.js';

export interface EventStreamReservation {
  id: number;
  /** The stream whose hello names `id`; rejects with the connection's loss. */
  events: Promise<FrameStream>;
  /**
   * `events`, waited for once the broker has answered that it opens the stream: for at most the
   * connection's bound from now (then EventStreamTimeoutError naming `what`), or until `signal`
   * aborts (AbortedError). A broker that answered and crashed, or a stream lost on the way, once
   * held the caller here for as long as the connection lived.
   */
  opened(signal: AbortSignal | undefined, what: string): Promise<FrameStream>;
  /** Drops the reservation (a stream arriving for it later is reset). */
  cancel(): void;
}

export class EventStreams {
  private nextId = 1;
  private readonly waiters = new Map<number, (fs: FrameStream) => void>();
  private readonly unclaimed = new Map<number, FrameStream>();
  /**
   * The reservations still waiting for their stream, failed together with the connection. One
   * `then` on the loss promise per reservation kept each one's stream (and its subscription)
   * reachable for the life of the connection, long after it ended.
   */
  private readonly pending = new Map<number, (err: Error) => void>();
  private lostWith: Error | undefined;

  constructor(
    private readonly conn: Connection,
    lost: Promise<Error>,
    /** How long `opened` waits (EVENT_STREAM_WAIT_MS_MAX, or the request timeout if shorter). */
    private readonly waitMs = EVENT_STREAM_WAIT_MS_MAX,
  ) {
    void lost.then((err) => {
      this.lostWith = err;
      for (const reject of this.pending.values()) reject(err);
      this.pending.clear();
    });
  }

  /** Accepts the broker's streams until the connection ends. */
  async accept(): Promise<void> {
    try {
      for await (const s of this.conn.incoming()) {
        if (s.kind !== 'uni') {
          s.reset(0);
          continue;
        }
        void this.claim(s);
      }
    } catch {
      // the connection ended; its loss is reported from `closed`
    }
  }

  private async claim(s: TransportStream): Promise<void> {
    const fs = new FrameStream(s);
    try {
      const first = await fs.next();
      if (first?.flags !== 0) throw new ProtocolError('event stream without a hello');
      const hello = decodeMessage(first.payload);
      if (hello.type !== 'event_stream_hello')
        throw new ProtocolError(`event stream opened with ${hello.type}`);
      const waiter = this.waiters.get(hello.subscription_id);
      if (waiter) {
        this.waiters.delete(hello.subscription_id);
        waiter(fs);
      } else if (hello.subscription_id < this.nextId) {
        // Its reservation was made and dropped (the subscribe failed, was aborted or gave up
        // waiting for this stream): nobody will claim it, and it holds one of our streams.
        s.reset(0);
      } else if (this.unclaimed.size < UNCLAIMED_EVENT_STREAMS_MAX) {
        this.unclaimed.set(hello.subscription_id, fs);
      } else {
        s.reset(0);
      }
    } catch {
      s.reset(0);
    }
  }

  /** Reserves an id for a stream the broker will open (a subscription or a watch). */
  reserve(): EventStreamReservation {
    const id = this.nextId++;
    const events = new Promise<FrameStream>((resolve, reject) => {
      if (this.lostWith !== undefined) return reject(this.lostWith);
      const early = this.unclaimed.get(id);
      if (early) {
        this.unclaimed.delete(id);
        return resolve(early);
      }
      this.pending.set(id, reject);
      this.waiters.set(id, (fs) => {
        this.pending.delete(id);
        resolve(fs);
      });
    });
    events.catch(() => undefined); // observed by whoever awaits it; a cancelled one by nobody
    return {
      id,
      events,
      opened: (signal, what) => this.bounded(events, signal, what),
      cancel: () => {
        this.waiters.delete(id);
        this.pending.delete(id);
      },
    };
  }

  private async bounded(
    events: Promise<FrameStream>,
    signal: AbortSignal | undefined,
    what: string,
  ): Promise<FrameStream> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EventStreamTimeoutError(what, this.waitMs)), this.waitMs);
    });
    try {
      return await abortable(Promise.race([events, expired]), signal, what, false);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resets the streams nobody claimed: the connection is gone. */
  fail(): void {
    for (const fs of this.unclaimed.values()) fs.stream.reset(0);
    this.unclaimed.clear();
  }
}
