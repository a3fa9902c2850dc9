/**
 * A bound on a wait that already ends at a caller's abort: one signal that aborts when the
 * caller's does or when `ms` pass, so the reset a wait does at an abort (a stream's, see
 * resetOnAbort) serves the bound too, and `expired` tells the two apart. No I/O.
 */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private readonly unlink: () => void;
  /** True once `ms` passed before `clear` (the caller's abort leaves it false). */
  expired = false;

  constructor(
    readonly ms: number,
    caller: AbortSignal | undefined,
  ) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort(new Error(`no answer within ${ms} ms`));
    }, ms);
    const onAbort = () => this.controller.abort(caller?.reason);
    if (caller?.aborted) onAbort();
    caller?.addEventListener('abort', onAbort, { once: true });
    this.unlink = () => caller?.removeEventListener('abort', onAbort);
  }

  /** Aborts at the caller's abort or at the bound, whichever comes first. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The answer came: the bound no longer applies (the caller's abort still does). */
  clear(): void {
    clearTimeout(this.timer);
  }

  /** Done with the wait: neither the bound nor the caller's abort reaches `signal` any more. */
  dispose(): void {
    clearTimeout(this.timer);
    this.unlink();
  }
}
