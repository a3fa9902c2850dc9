/**
 * A pass run one at a time and again while kicked during it, so a burst of kicks costs one
 * pass more at most. A pass that throws is handed to `failed` (the next kick runs it again).
 */
export class CoalescedRuns {
  private running: Promise<void> | null = null;
  private dirty = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly failed: (err: unknown) => void,
    private readonly stopped: () => boolean,
  ) {}

  /** Runs a pass soon (coalesced). */
  kick(): void {
    if (this.stopped()) return;
    this.dirty = true;
    if (this.running) return;
    this.running = (async () => {
      while (this.dirty && !this.stopped()) {
        this.dirty = false;
        try {
          await this.pass();
        } catch (err) {
          this.failed(err);
        }
      }
      this.running = null;
    })();
  }

  /** Resolves once no pass is running and none is owed. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }
}
