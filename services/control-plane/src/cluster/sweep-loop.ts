/**
 * When the down sweep runs: every sweep interval, and once more at the moment the earliest
 * node's window (L + margin) ends when that comes before the next periodic sweep, so a dead
 * node's shards are given away at the window's end, not up to a sweep interval after it.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Sweeper } from './liveness.js';

export class SweepLoop {
  private periodic: NodeJS.Timeout | undefined;
  private due: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly sweeper: Sweeper,
    private readonly intervalMs: number,
    /** Called with the nodes a sweep marked down (none: not called). */
    private readonly onDown: (nodeIds: string[]) => Promise<void>,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.periodic = setInterval(() => void this.sweep(), this.intervalMs);
    this.periodic.unref();
  }

  stop(): void {
    this.running = false;
    if (this.periodic !== undefined) clearInterval(this.periodic);
    if (this.due !== undefined) clearTimeout(this.due);
    this.periodic = undefined;
    this.due = undefined;
  }

  /** A heartbeat this instance accepted (its stamp written): the sweep counts from now. */
  heard(nodeId: string, stamp: number): void {
    this.sweeper.heard(nodeId, stamp);
    // A timer already set is due no later than this node's new window.
    if (this.due === undefined) this.sweepIn(this.sweeper.heardDueInMs(nodeId));
  }

  private async sweep(): Promise<void> {
    try {
      const down = await this.sweeper.sweep();
      if (down.length > 0) await this.onDown(down);
    } catch (err) {
      this.log.warn({ err }, 'expiry sweep failed');
    }
    this.sweepIn(this.sweeper.nextDueInMs());
  }

  /** Sets the one timed sweep `inMs` from now, replacing any; none when the periodic sweep
   *  comes first. */
  private sweepIn(inMs: number | undefined): void {
    if (this.due !== undefined) clearTimeout(this.due);
    this.due = undefined;
    if (!this.running || inMs === undefined || inMs >= this.intervalMs) return;
    this.due = setTimeout(() => {
      this.due = undefined;
      void this.sweep();
    }, inMs);
    this.due.unref();
  }
}
