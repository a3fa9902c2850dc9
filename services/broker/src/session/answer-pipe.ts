/**
 * Ordered publish answers on one client stream, with the publish window. Answers are written in
 * request order whatever order their appends finish in; at `window` unanswered publishes the
 * reader waits in `room()`, so the broker stops reading that stream and transport flow control
 * backs the client off.
 */
import type { TransportStream } from '@felix/transport';

export class AnswerPipe {
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private waiter: (() => void) | null = null;
  broken: unknown = null;

  constructor(
    private readonly stream: TransportStream,
    private readonly window: number,
  ) {}

  get pending(): number {
    return this.inFlight;
  }

  /** Queues an answer; `null` means the publish owes none (still counts until it settles). */
  push(answer: Promise<Uint8Array | null>): void {
    this.inFlight++;
    this.tail = this.tail
      .then(async () => {
        const bytes = await answer;
        if (bytes && this.broken === null) await this.stream.write(bytes);
      })
      .catch((err: unknown) => {
        this.broken ??= err;
      })
      .finally(() => {
        this.inFlight--;
        const w = this.waiter;
        this.waiter = null;
        w?.();
      });
  }

  /** Waits until fewer than `window` publishes are unanswered. */
  async room(): Promise<void> {
    while (this.inFlight >= this.window) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  /** Resolves once every queued answer is written (or the stream broke). */
  drain(): Promise<void> {
    return this.tail;
  }
}
