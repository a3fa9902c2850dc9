/**
 * What `close()` waits for, bounded, before it closes the connections: the hand-backs consume
 * loops started as they ended (a worker's `break` then `close()`), so their records go back
 * instead of lapsing after their visibility timeout. No I/O of its own.
 */
import { setMaxListeners } from 'node:events';
import { CLOSE_HAND_BACKS_TRACKED_MAX, CLOSE_HAND_BACK_WAIT_MS_MAX } from '../limits.js';

export class LeavingWork {
  private readonly work = new Set<Promise<unknown>>();

  /** Tracks `p` until it settles (past CLOSE_HAND_BACKS_TRACKED_MAX at once, not tracked). */
  add(p: Promise<unknown>): void {
    if (this.work.size >= CLOSE_HAND_BACKS_TRACKED_MAX) return;
    const done: Promise<unknown> = p.then(
      (): boolean => this.work.delete(done),
      (): boolean => this.work.delete(done),
    );
    this.work.add(done);
  }

  /** Resolves once no tracked work is left (work may start more: a poll ahead's answer is
   *  handed back in turn), or after CLOSE_HAND_BACK_WAIT_MS_MAX; at once when there is none. */
  async settle(): Promise<void> {
    if (this.work.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    let expired = false;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        expired = true;
        resolve();
      }, CLOSE_HAND_BACK_WAIT_MS_MAX);
    });
    try {
      while (this.work.size > 0 && !expired)
        await Promise.race([Promise.allSettled([...this.work]), bound]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An AbortController whose signal warns of no listener count (the client's close signal). */
export function quietController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}
