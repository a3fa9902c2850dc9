/**
 * Long polls on the change feeds. A poll re-reads the store when a write to its feed commits
 * (locally, or on another instance through the driver's notifications), at least every
 * LONG_POLL_REREAD_INTERVAL_MS, and answers as soon as it has rows or its wait runs out.
 */
import {
  LONG_POLL_REREAD_INTERVAL_MS,
  LONG_POLL_WAIT_MS_MAX,
  LONG_POLL_WAITERS_MAX,
} from '../limits.js';
import type { Metrics } from '../metrics.js';
import type { ControlStore } from '../store/store.js';
import type { ChangesPage, FeedName } from '../store/types.js';

interface Ticket {
  woken: boolean;
  wake: (() => void) | undefined;
}

export class FeedHub {
  private readonly waiting = new Map<FeedName, Set<Ticket>>();
  private parked = 0;
  private closing = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: ControlStore,
    private readonly metrics: Metrics,
    private readonly rereadIntervalMs = LONG_POLL_REREAD_INTERVAL_MS,
  ) {
    this.unsubscribe = store.onChange((feeds) => this.wake(feeds));
  }

  private wake(feeds: readonly FeedName[]): void {
    for (const f of feeds) {
      for (const t of this.waiting.get(f) ?? []) {
        t.woken = true;
        t.wake?.();
      }
    }
  }

  /** Long polls parked right now. */
  get parkedCount(): number {
    return this.parked;
  }

  /** Answers every parked poll now (shutdown). */
  close(): void {
    this.closing = true;
    this.unsubscribe();
    for (const set of this.waiting.values()) {
      for (const t of set) {
        t.woken = true;
        t.wake?.();
      }
    }
  }

  /** Changes from `since`, waiting up to `waitMs` (capped at 25 s) for the first one. */
  async poll(feed: FeedName, since: number, waitMs: number, limit: number): Promise<ChangesPage> {
    const deadline = performance.now() + Math.min(Math.max(0, waitMs), LONG_POLL_WAIT_MS_MAX);
    const ticket: Ticket = { woken: false, wake: undefined };
    let set = this.waiting.get(feed);
    if (!set) this.waiting.set(feed, (set = new Set()));
    // Registered before the first read, so a commit landing between read and park still wakes us.
    set.add(ticket);
    try {
      for (;;) {
        ticket.woken = false;
        const page = await this.store.feeds.changes(feed, since, limit);
        const remaining = deadline - performance.now();
        if (page.items.length > 0 || page.next_seq !== since || remaining <= 0 || this.closing)
          return page;
        if (ticket.woken) continue;
        if (this.parked >= LONG_POLL_WAITERS_MAX) {
          this.metrics.longPollOverflow.inc();
          return page;
        }
        this.parked++;
        this.metrics.longPollWaiters.set(this.parked);
        try {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(remaining, this.rereadIntervalMs));
            ticket.wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        } finally {
          ticket.wake = undefined;
          this.parked--;
          this.metrics.longPollWaiters.set(this.parked);
        }
      }
    } finally {
      set.delete(ticket);
      if (set.size === 0) this.waiting.delete(feed);
    }
  }
}
