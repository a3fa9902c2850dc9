/**
 * The receive deadline of a stream's partial frame: a stream may hold one incomplete frame
 * (header or body) for at most `broker.partial_frame_deadline_ms`, else it is refused and
 * ended, so a peer cannot pin a frame's worth of broker memory by never sending its last byte.
 */

/**
 * One timer per stream at most, armed when a frame is first left partial and re-armed from its
 * own callback; the reader only notes, once per chunk, whether a frame is held and whether the
 * chunk completed any (then the held frame is a new one). No timer is set or cleared per frame.
 */
export class PartialDeadline {
  /** When the held frame began to be held (ms); 0 while none is. */
  private since = 0;
  /** True while the session is working through a chunk: the broker, not the peer, is late. */
  private busy = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly ms: number,
    private readonly onExpired: () => void,
  ) {}

  /** A chunk arrived; its frames are being served. */
  begin(): void {
    this.busy = true;
  }

  /** The chunk is served: `partial` when a frame is left incomplete, `progressed` when the
   *  chunk completed at least one frame (so the one held now began in this chunk). */
  note(partial: boolean, progressed: boolean): void {
    this.busy = false;
    if (!partial) {
      this.since = 0;
      return;
    }
    if (progressed || this.since === 0) this.since = Date.now();
    if (this.timer === null && !this.stopped) this.arm(this.ms);
  }

  /**
   * The session read nothing for a while of its own accord (a connection over its answer
   * budget, begun with `begin()`): the peer could not send meanwhile, so the held frame's clock
   * starts again now.
   */
  resumed(): void {
    this.busy = false;
    if (this.since !== 0) this.since = Date.now();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.fire(), ms);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = null;
    if (this.stopped || this.since === 0) return; // nothing held: the next partial frame re-arms
    const left = this.since + this.ms - Date.now();
    if (this.busy || left > 0) {
      this.arm(this.busy ? this.ms : left);
      return;
    }
    this.stop();
    this.onExpired();
  }
}
