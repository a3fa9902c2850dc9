/**
 * The end of the event-loop turn, shared by everything in one client that batches per turn:
 * gathered acked publishes, the streams' writers (unacked publishes, requests, settles), a
 * publisher with `lingerMs: 0` and a group's acks and nacks. Each registers a flush once per
 * turn; the flushes run in registration order once the turn's callbacks and promise reactions
 * have run (`process.nextTick`: a later phase such as `setImmediate` can come tens of
 * microseconds later). A flush may register another (a sealed batch queues its stream's
 * write): it runs in the same pass.
 */
import { TURN_FLUSHES_MAX } from '../limits.js';

export class TurnBatcher {
  private due: Array<() => void> = [];
  private scheduled = false;
  private running = false;

  /** Runs `flush` at the end of this turn. */
  atTurnEnd(flush: () => void): void {
    // Each entry is one open batch; past the bound (far more than a window of batches) the
    // turn's batches go now rather than hold more: flushing early is always correct.
    if (this.due.length >= TURN_FLUSHES_MAX && !this.running) this.run();
    this.due.push(flush);
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.run);
    }
  }

  private readonly run = (): void => {
    this.scheduled = false;
    this.running = true;
    const due = this.due;
    let failure: { error: unknown } | undefined;
    for (let i = 0; i < due.length; i++) {
      // One batch that cannot be sent (a programmer error) must not hold the others back.
      try {
        due[i]!();
      } catch (error) {
        failure ??= { error };
      }
    }
    this.running = false;
    if (this.due === due) this.due = [];
    if (failure !== undefined) throw failure.error;
  };
}
