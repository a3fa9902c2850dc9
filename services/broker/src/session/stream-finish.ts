/**
 * The end of a connection's request streams when the broker stops (SIGTERM): a notice, in band,
 * of what was applied, as HTTP/2's GOAWAY is. From `begin()` no request read on any stream of
 * the connection is handed to a handler; each request stream the broker answers is then ended
 * (our half-close) once the chunk being served is done with and every answer owed on it is
 * written. A client that reads our end of a request stream therefore knows that every request
 * it sent there and got no answer for was never applied, and may send it elsewhere: without the
 * notice a request in flight when the connection closed could only be reported as an unknown
 * outcome. The connection is closed once each peer has closed its side of those streams (it has
 * read our end), bounded by the caller.
 *
 * Not ended here: publish-only streams (the broker never answers on them: what they carry after
 * `begin()` is dropped, as a fire-and-forget publish to a stopped broker is), streams that opened
 * a subscription or a watch (their own streams end with the connection and the readers resume
 * elsewhere from the next offset) and streams that have not authenticated (their `auth` is
 * refused `draining`).
 */
import type { TransportStream } from '@felix/transport';
import type { AnswerPipe } from './answer-pipe.js';

/** What the finish of one stream reads of the session's state for it. */
export interface Finishable {
  readonly stream: TransportStream;
  readonly answers: AnswerPipe;
  /** A publish-only stream: nothing is answered on it. */
  readonly quiet: boolean;
  /** The stream is already being ended (a refusal, a budget, a deadline). */
  expired: boolean;
  /** The serving of the chunk that last had to wait: awaited before the stream is ended. */
  busy: Promise<unknown> | null;
  /** Set once the stream's finish began. */
  finishing: Promise<void> | null;
  rc: { readonly longLived: boolean } | null;
}

export class StreamFinish {
  private begun = false;
  /** The connection's streams being read, finished at `begin()`. */
  private readonly streams = new Set<Finishable>();

  /** True once no request read is handed on: the readers stop at their next chunk or frame. */
  get active(): boolean {
    return this.begun;
  }

  track(st: Finishable): void {
    this.streams.add(st);
  }

  untrack(st: Finishable): void {
    this.streams.delete(st);
  }

  /**
   * Stops handing on what is read and ends every request stream once its answers are written;
   * resolves once each such stream's peer closed its side too, or after `peerCloseMs` (a peer
   * that never does cannot hold the broker's stop).
   */
  async begin(peerCloseMs: number): Promise<void> {
    this.begun = true;
    const ending = [...this.streams].filter(endsHere);
    await Promise.all(ending.map((st) => this.finish(st)));
    // Counted from the last end sent: the client needs the time to read it, however long the
    // answers before it took.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, peerCloseMs);
      timer.unref();
    });
    try {
      await Promise.race([Promise.all(ending.map(closedOf)), bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Ends one stream (once): after the chunk being served and the answers owed. A reader that
   * meets `active` calls it for its own stream, so a stream that authenticated during the stop
   * is ended too. Never rejects: a stream that broke meanwhile is ended by its break.
   */
  finish(st: Finishable): Promise<void> {
    if (st.finishing !== null) return st.finishing;
    if (!endsHere(st)) return Promise.resolve();
    st.finishing = (async () => {
      let failed = false;
      await st.busy?.catch(() => {
        failed = true; // a request it served may be unanswered: no notice
      });
      await st.answers.drain();
      // The end is a notice that all applied was answered (FEATURE_HI_STREAM_END_NOTICE): a
      // stream whose serving failed or whose answers broke is reset instead (an unknown outcome).
      if (failed || st.answers.broken !== null) st.stream.reset(0);
      else if (!st.expired) await st.stream.end();
    })().catch(() => undefined); // the stream broke: the peer hears of that instead
    return st.finishing;
  }
}

/** Whether the stop ends this stream with our half-close (see the top of this file). */
function endsHere(st: Finishable): boolean {
  return !st.quiet && st.rc !== null && !st.rc.longLived;
}

function closedOf(st: Finishable): Promise<void> {
  return st.stream.closed;
}
