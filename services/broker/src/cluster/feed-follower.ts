/**
 * Follows one control-plane feed: apply the snapshot, then long-poll `changes?since=` and apply
 * each page, resnapshotting on the documented signals (the first seq past `since`, an empty page
 * whose `next_seq` moved past `since`, a `next_seq` below `since`). Failed calls are retried with
 * doubling backoff from the position already held; they are never fatal. `resync()` makes it
 * resnapshot at once (a call in flight or a backoff is cut short); `onAnswered` hears the send
 * time of each call whose answer was applied.
 */
import type { Logger } from 'pino';
import { ControlPlaneUnavailableError } from '../errors.js';
import { CONTROLPLANE_RETRY_MS_MAX, CONTROLPLANE_RETRY_MS_MIN } from '../limits.js';
import type { ControlPlaneClient, FeedChange } from './control-plane-client.js';

export interface FeedHandler {
  /** Replaces everything held from this feed. */
  snapshot(items: unknown[]): void;
  /** Applies one page of changes, in seq order. */
  changes(items: FeedChange[]): void;
}

export type ResnapshotReason = 'gap_in_history' | 'sequence_reset';

/** Returns why a page means the reader must resnapshot, or null when it follows on. */
export function resnapshotReason(
  since: number,
  page: { items: { seq: number }[]; nextSeq: number },
): ResnapshotReason | null {
  if (page.nextSeq < since) return 'sequence_reset';
  const first = page.items[0];
  if (first !== undefined && first.seq > since) return 'gap_in_history';
  if (first === undefined && page.nextSeq > since) return 'gap_in_history';
  return null;
}

export class FeedFollower {
  private readonly abort = new AbortController();
  /** Aborted by resync(): ends the call in flight or the backoff. */
  private wake = new AbortController();
  private resyncWanted = false;
  private loop: Promise<void> | null = null;
  private snapshotted = false;
  private readonly firstSnapshot: Promise<void>;
  private resolveFirst!: () => void;

  constructor(
    private readonly client: ControlPlaneClient,
    readonly feed: string,
    private readonly waitMs: number,
    private readonly handler: FeedHandler,
    private readonly log: Logger,
    private readonly onResync: (reason: ResnapshotReason) => void,
    /** Told `performance.now()` at the send of each call whose answer was applied. */
    private readonly onAnswered: (sentAtMono: number) => void = () => undefined,
  ) {
    this.firstSnapshot = new Promise((resolve) => {
      this.resolveFirst = resolve;
    });
  }

  /** True once the first snapshot was applied. */
  get synced(): boolean {
    return this.snapshotted;
  }

  /** Resolves once the first snapshot was applied. */
  whenSynced(): Promise<void> {
    return this.firstSnapshot;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** Resnapshots now: the call in flight (or the backoff after a failed one) is abandoned. */
  resync(): void {
    this.resyncWanted = true;
    this.wake.abort();
  }

  private async run(): Promise<void> {
    const stopped = this.abort.signal;
    let since: number | null = null;
    let delay = CONTROLPLANE_RETRY_MS_MIN;
    while (!stopped.aborted) {
      this.wake = new AbortController();
      const signal = AbortSignal.any([stopped, this.wake.signal]);
      if (this.resyncWanted) {
        this.resyncWanted = false;
        since = null;
      }
      const sentAt = performance.now();
      try {
        if (since === null) {
          const snap = await this.client.snapshot(this.feed, signal);
          this.handler.snapshot(snap.items);
          since = snap.nextSeq;
          this.onAnswered(sentAt);
          if (!this.snapshotted) {
            this.snapshotted = true;
            this.resolveFirst();
          }
        } else {
          const page = await this.client.changes(this.feed, since, this.waitMs, signal);
          const reason = resnapshotReason(since, page);
          if (reason !== null) {
            this.log.warn({ feed: this.feed, since, next_seq: page.nextSeq, reason }, 'resnapshot');
            this.onResync(reason);
            since = null;
            continue;
          }
          if (page.items.length > 0) this.handler.changes(page.items);
          since = page.nextSeq;
          this.onAnswered(sentAt);
        }
        delay = CONTROLPLANE_RETRY_MS_MIN;
      } catch (err) {
        if (stopped.aborted) return;
        if (this.resyncWanted) continue; // abandoned by resync(): snapshot at once
        // Not answering: the broker's one warning per outage says so (reachability.ts).
        if (err instanceof ControlPlaneUnavailableError)
          this.log.debug({ err, feed: this.feed }, 'control plane feed call failed; retrying');
        else this.log.warn({ err, feed: this.feed }, 'control plane feed call failed; retrying');
        await sleep(delay, signal);
        delay = Math.min(delay * 2, CONTROLPLANE_RETRY_MS_MAX);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
