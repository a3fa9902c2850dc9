/**
 * The uni streams a broker opens to this client, one per subscription or watch: each starts
 * with `event_stream_hello` naming the id the client reserved for it. A stream whose reservation
 * is not made yet waits among the unclaimed (at most UNCLAIMED_EVENT_STREAMS_MAX); anything else
 * is reset.
 */
import type { Connection, TransportStream } from '@felix/transport';
import { decodeMessage } from '@felix/wire';
import { ProtocolError } from '../errors.js';
import { UNCLAIMED_EVENT_STREAMS_MAX } from '../limits.js';
import { FrameStream } from './frame-stream.js';

export interface EventStreamReservation {
  id: number;
  /** The stream whose hello names `id`; rejects with the connection's loss. */
  events: Promise<FrameStream>;
  /** Drops the reservation (a stream arriving for it later is left unclaimed). */
  cancel(): void;
}

export class EventStreams {
  private nextId = 1;
  private readonly waiters = new Map<number, (fs: FrameStream) => void>();
  private readonly unclaimed = new Map<number, FrameStream>();

  constructor(
    private readonly conn: Connection,
    private readonly lost: Promise<Error>,
  ) {}

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
      const early = this.unclaimed.get(id);
      if (early) {
        this.unclaimed.delete(id);
        resolve(early);
      } else this.waiters.set(id, resolve);
      void this.lost.then(reject);
    });
    events.catch(() => undefined); // observed by whoever awaits it; a cancelled one by nobody
    return { id, events, cancel: () => this.waiters.delete(id) };
  }

  /** Resets the streams nobody claimed: the connection is gone. */
  fail(): void {
    for (const fs of this.unclaimed.values()) fs.stream.reset(0);
    this.unclaimed.clear();
  }
}
