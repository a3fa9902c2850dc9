/**
 * How cache, counter, watch and group requests are answered: in request order on the stream's
 * AnswerPipe, so an `error` (which carries no request id) always belongs to the oldest unanswered
 * request on that stream. A refused request is counted by type and code (and as bad input unless
 * the broker, not the request, is at fault) and answered with the refusal's `error` frame.
 */
import type { Message } from '@felix/wire';
import type { BrokerMetrics } from '../metrics.js';
import { jsonFrame } from '../session/codec.js';
import type { Outcome, RequestContext } from '../session/handler.js';
import type { Negotiated } from '../session/negotiation.js';
import { errorFrame } from '../session/refusal.js';
import { storageRefusal } from './cache-service.js';
import type { ProjectionMetrics } from './projection-metrics.js';

/** Encodes an answer message; a family with a binary answer layout passes its own. */
export type AnswerEncoder = (auth: Negotiated, m: Message) => Uint8Array;

const asJson: AnswerEncoder = (_auth, m) => jsonFrame(m);

/** A request's answer: made in the turn, or a promise of it; null when none is owed. */
export type Answer = Message | null | Promise<Message | null>;

export class ProjectionAnswers {
  constructor(
    readonly metrics: ProjectionMetrics,
    private readonly brokerMetrics: BrokerMetrics,
  ) {}

  /**
   * Counts the request and queues its answer, built by `answer` (a function made once, not per
   * request) once the pipe has room: nothing unanswered means room, so a lone request waits for
   * nothing. An answer made in the turn (not a promise) is encoded and written in the turn when
   * nothing is queued ahead of it (no promise, no extra turn).
   */
  queue<M extends Message>(
    rc: RequestContext,
    msg: M,
    answer: (msg: M, rc: RequestContext) => Answer,
    encode: AnswerEncoder = asJson,
  ): Outcome | Promise<Outcome> {
    this.metrics.countRequest(msg.type);
    if (rc.answers.pending > 0) return this.queueAfterRoom(rc, msg, answer, encode);
    this.push(rc, msg.type, answer(msg, rc), encode);
    return null;
  }

  private async queueAfterRoom<M extends Message>(
    rc: RequestContext,
    msg: M,
    answer: (msg: M, rc: RequestContext) => Answer,
    encode: AnswerEncoder,
  ): Promise<Outcome> {
    await rc.answers.room();
    this.push(rc, msg.type, answer(msg, rc), encode);
    return null;
  }

  push(rc: RequestContext, type: string, answer: Answer, encode: AnswerEncoder = asJson): void {
    const auth = rc.auth;
    if (!(answer instanceof Promise)) {
      if (answer !== null) rc.answers.pushReady(this.encodeNow(auth, type, answer, encode));
      return;
    }
    rc.answers.push(
      answer.then(
        (m) => (m === null ? null : encode(auth, m)),
        (err: unknown) => this.errorFrame(auth, type, err),
      ),
    );
  }

  /** An answer made in the turn, encoded (or its encoding's failure as the `error` answer). */
  private encodeNow(auth: Negotiated, type: string, m: Message, encode: AnswerEncoder) {
    try {
      return encode(auth, m);
    } catch (err) {
      return this.errorFrame(auth, type, err);
    }
  }

  /** The `error` answer of a refused (or failed) request, counted. */
  errorFrame(auth: Negotiated, type: string, err: unknown): Uint8Array {
    const r = storageRefusal(type, err);
    this.metrics.refusals.inc({ type, code: r.wireCode });
    if (r.wireCode !== 'storage' && r.wireCode !== 'internal' && r.wireCode !== 'draining') {
      this.brokerMetrics.badInput.inc({ reason: r.reason });
    }
    return errorFrame(auth, r);
  }
}
