/**
 * One publish's request timeout as a whole, as a signal its waits take: the shard lookup, the
 * owner lookup, the wait for a reconnect, a dial to the owner. Each of those may be shared with
 * another caller (a subscription's resubscribe, a consume loop's poll) that began before the
 * publish and waits a request timeout of its own, or is started again after failing: joined
 * without this signal, a publish waited on past its own timeout for as long as the broker was
 * away. No I/O; the timer is set on first use, so a publish that never waits sets none.
 */
export class PublishWindow {
  private controller: AbortController | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private expired = false;
  private readonly onCallerAbort = () => this.controller?.abort(this.caller?.reason);

  constructor(
    readonly untilMs: number,
    private readonly caller: AbortSignal | undefined,
  ) {}

  /** The signal ending this publish's waits: the caller's abort, or the end of the window. */
  signal(): AbortSignal {
    if (this.controller !== null) return this.controller.signal;
    const c = new AbortController();
    this.controller = c;
    const caller = this.caller;
    if (caller?.aborted) c.abort(caller.reason);
    else caller?.addEventListener('abort', this.onCallerAbort, { once: true });
    const end = () => {
      this.expired = true;
      c.abort(new Error('the publish reached its request timeout'));
    };
    const leftMs = this.untilMs - Date.now();
    if (leftMs <= 0) end();
    else this.timer = setTimeout(end, leftMs);
    return c.signal;
  }

  /** The window ended (not the caller's signal): a wait it cut short is this publish's timeout. */
  get ended(): boolean {
    return this.expired && this.caller?.aborted !== true;
  }

  /** Clears the timer and the listener on the caller's signal (the publish is over). */
  dispose(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}
