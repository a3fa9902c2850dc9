/**
 * What clients' requests may pin in broker memory, in bytes, at three levels:
 * - a stream: one frame (`max_frame_bytes`, checked on its header by the frame reader);
 * - a connection: `connection_partial_frame_bytes` in partially received frames over all its
 *   streams (the stream whose read takes it past is refused: client-session.ts), and
 *   `connection_answer_bytes` in complete requests not yet answered (past it the session stops
 *   reading the connection's streams until answers drain: backpressure, nothing dropped);
 * - the broker: `inflight_request_bytes`, both kinds over every connection (a stream whose next
 *   read would take the broker past it is refused with `overloaded`).
 * The ledgers only count; the session decides. Counting is a few additions per chunk and per
 * answer, no timer and no allocation.
 */
import type { BrokerMetrics } from '../metrics.js';
import type { AnswerCharges } from './answer-pipe.js';
import type { SessionContext } from './context.js';

/** Request bytes in flight over every connection of one broker. */
export class InflightBytes {
  bytes = 0;

  constructor(readonly budget: number) {}

  /** True when `more` bytes would take the broker past its budget. */
  wouldExceed(more: number): boolean {
    return this.bytes + more > this.budget;
  }
}

/** One ledger per broker: keyed by its metrics, of which each broker instance has its own. */
const ledgers = new WeakMap<BrokerMetrics, InflightBytes>();

/** The broker-wide ledger of the broker `ctx` belongs to (made on first use). */
export function brokerInflight(ctx: SessionContext): InflightBytes {
  let ledger = ledgers.get(ctx.metrics);
  if (ledger === undefined) {
    const made = new InflightBytes(ctx.config.broker.inflight_request_bytes);
    ctx.metrics.inflightRequestBytesNow = () => made.bytes;
    ledgers.set(ctx.metrics, made);
    ledger = made;
  }
  return ledger;
}

/** One connection's ledger; every byte it counts is the broker's too. */
export class ConnectionBytes implements AnswerCharges {
  /** Bytes held in partially received frames over the connection's streams. */
  partial = 0;
  /** Bytes of complete requests not yet answered (and answers not yet written). */
  answers = 0;
  private waiters: Array<() => void> = [];

  constructor(
    readonly partialBudget: number,
    readonly answerBudget: number,
    private readonly broker: InflightBytes,
  ) {}

  /** A stream's partial frame grew (or shrank, negative) by `delta` bytes. */
  addPartial(delta: number): void {
    this.partial += delta;
    this.broker.bytes += delta;
  }

  get partialOver(): boolean {
    return this.partial > this.partialBudget;
  }

  charge(bytes: number): void {
    this.answers += bytes;
    this.broker.bytes += bytes;
  }

  release(bytes: number): void {
    this.answers -= bytes;
    this.broker.bytes -= bytes;
    if (this.waiters.length > 0 && !this.answersOver) {
      for (const w of this.waiters.splice(0)) w();
    }
  }

  get answersOver(): boolean {
    return this.answers > this.answerBudget;
  }

  /** Waits until the connection's unanswered bytes are within its budget again. */
  async answerRoom(): Promise<void> {
    while (this.answersOver) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
