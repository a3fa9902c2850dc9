/**
 * Publishes, JSON and binary: each is appended to the shard its key routes to and answered in
 * request order through the stream's AnswerPipe (within the publish window), as `publish_ok` /
 * `publish_error` or a binary ack using only the modifiers the client negotiated. A publish on a
 * publish-only stream, or one that asked for no ack, owes no answer. In a cluster, a publish to a
 * shard another broker leads is forwarded there and answered with the owner's offsets.
 */
import { FEATURE_ERROR_CODES, FLAG_BINARY_PUBLISH_ACK_OFFSET, type Message } from '@felix/wire';
import { LogPoisonedError } from '@felix/storage';
import { QuorumAbandonedError, QuorumTimeoutError } from '../errors.js';
import { PUBLISH_BATCH_RECORDS_MAX, QUORUM_WAITING_BATCHES_MAX } from '../limits.js';
import { DURABLE, FRAME_BINARY, FRAME_JSON, NOT_DURABLE } from '../metrics.js';
import type { ConnectionGrant } from '../session/grant.js';
import { ackFrame, type InboundFrame, jsonFrame, readPublish, routeKey } from '../session/codec.js';
import type { FrameHandler, Handler, Outcome, RequestContext } from '../session/handler.js';
import { SERVER_FLAGS, type Negotiated, has } from '../session/negotiation.js';
import type { Forwarding } from '../session/context.js';
import { NotLeaderRefusal, Refusal, drainingRefusal, wrongTenant } from '../session/refusal.js';
import { type Payloads, payloadArray, payloadCount } from './event-batch.js';
import type { StreamDeps } from './deps.js';

interface PublishRequest {
  tenant: string;
  namespace: string;
  stream: string;
  key: Uint8Array | undefined;
  /** Views (JSON), or the binary frame's unsplit list (forwarded to subscribers as it is). */
  payloads: Payloads;
  /** Present when an answer is owed. */
  requestId: number | undefined;
  json: boolean;
}

type JsonPublish = Extract<Message, { type: 'publish' | 'publish_batch' }>;

export class PublishHandlers {
  constructor(private readonly deps: StreamDeps) {}

  readonly json: Handler<JsonPublish> = {
    onPublishOnly: 'serve',
    shardLocation: 'handler',
    handle: (msg, rc) => this.publishJson(msg, rc),
  };

  readonly binary: FrameHandler = {
    handle: (frame, rc) => this.publishBinary(frame, rc),
  };

  private async publishJson(msg: JsonPublish, rc: RequestContext): Promise<Outcome> {
    const payloads = msg.type === 'publish' ? [msg.payload] : msg.payloads;
    const acked = msg.ack !== undefined && msg.ack !== 'none';
    if (acked && msg.request_id === undefined) {
      return new Refusal(
        'invalid_request',
        'an acked publish needs a request_id',
        'missing_request_id',
      );
    }
    this.deps.metrics.publishes.inc(1, FRAME_JSON);
    await rc.answers.room();
    rc.answers.push(
      this.publish(rc.auth, rc.grant, rc.answers, {
        tenant: msg.tenant_id,
        namespace: msg.namespace,
        stream: msg.stream,
        key: msg.key,
        payloads,
        requestId: acked && !rc.quiet ? msg.request_id : undefined,
        json: true,
      }),
    );
    return null;
  }

  private async publishBinary(frame: InboundFrame, rc: RequestContext): Promise<Outcome> {
    if ((frame.flags & ~SERVER_FLAGS) !== 0) {
      return new Refusal(
        'invalid_request',
        `publish flags 0x${frame.flags.toString(16)} not supported`,
        'unsupported_flag',
        { fatalToStream: true },
      );
    }
    let req: PublishRequest;
    try {
      const p = readPublish(frame);
      req = { ...p, json: false };
    } catch (err) {
      return new Refusal('invalid_request', (err as Error).message, 'malformed_publish', {
        fatalToStream: true,
      });
    }
    if (rc.quiet) req.requestId = undefined;
    await rc.answers.room();
    rc.answers.push(this.publish(rc.auth, rc.grant, rc.answers, req));
    return null;
  }

  /**
   * Appends (or forwards) and builds the answer bytes (or null when none is owed). `order` is
   * the client stream: forwarded publishes keep its order.
   */
  private async publish(
    auth: Negotiated,
    grant: ConnectionGrant,
    order: object,
    req: PublishRequest,
  ): Promise<Uint8Array | null> {
    const { metrics: m, ownership } = this.deps;
    if (this.deps.draining()) return this.answerError(auth, req, drainingRefusal());
    if (req.tenant !== auth.tenant) return this.answerError(auth, req, wrongTenant(auth));
    // Authorization (admission.ts, auth/access.ts): checked here, where the answer's form is known.
    const denied = grant.checkPublish(req.tenant, req.namespace, req.stream);
    if (denied !== null) return this.answerError(auth, req, denied);
    const stream = this.deps.streams.get(req.tenant, req.namespace, req.stream);
    if (!stream) {
      const message = `stream ${req.namespace}/${req.stream} not found`;
      return this.answerError(auth, req, new Refusal('not_found', message, 'unknown_stream'));
    }
    const { records, bytes } = payloadCount(req.payloads);
    if (records === 0) {
      const refusal = new Refusal('invalid_request', 'empty publish batch', 'empty_batch');
      return this.answerError(auth, req, refusal);
    }
    // Refused before anything is appended: each record costs the log and the ring an entry, so
    // the count, not the frame's bytes, is what a batch of empty records would make us build.
    if (records > PUBLISH_BATCH_RECORDS_MAX) {
      const message = `a publish batch carries at most ${PUBLISH_BATCH_RECORDS_MAX} records, this one ${records}`;
      return this.answerError(auth, req, new Refusal('limit_exceeded', message, 'batch_records'));
    }
    const shardIndex = req.key ? routeKey(req.key, stream.shards.length, stream.config.routing) : 0;
    // The ownership half of admission (admission.ts): the shard is known only after routing.
    const unheld = ownership?.refuse(
      'stream',
      req.tenant,
      req.namespace,
      req.stream,
      shardIndex,
      true,
    );
    const forwarding = this.deps.forwarding?.current ?? null;
    if (unheld instanceof NotLeaderRefusal && forwarding !== null)
      return this.forward(forwarding, auth, grant.token, order, req, unheld);
    if (unheld) return this.answerError(auth, req, unheld);
    const shard = stream.shards[shardIndex]!;
    if (shard.quorumWaiting >= QUORUM_WAITING_BATCHES_MAX) {
      const message = `${shard.name} holds ${shard.quorumWaiting} batches waiting for a majority`;
      return this.answerError(auth, req, new Refusal('overloaded', message, 'quorum_backlog'));
    }
    if (!req.json) m.publishes.inc(1, FRAME_BINARY);
    const started = process.hrtime.bigint();
    let result: { first: number; next: number };
    try {
      result = await shard.publish(req.payloads, Date.now() * 1000);
    } catch (err) {
      return this.answerError(auth, req, this.publishFailure(err, shard.name));
    }
    m.appendLatency.observe(
      shard.durable ? DURABLE : NOT_DURABLE,
      Number(process.hrtime.bigint() - started) / 1e9,
    );
    m.publishedRecords.inc(records);
    m.publishedBytes.inc(bytes);
    return this.answerOk(auth, req, result.first);
  }

  /**
   * Sends the publish to its shard's leader and answers from the leader's answer only (its
   * offsets; an unanswered forward is `unacknowledged`, never resent).
   */
  private async forward(
    forwarding: Forwarding,
    auth: Negotiated,
    token: string,
    order: object,
    req: PublishRequest,
    to: NotLeaderRefusal,
  ): Promise<Uint8Array | null> {
    let result: { first: number; last: number };
    try {
      result = await forwarding.publish(to, payloadArray(req.payloads), token, order);
    } catch (err) {
      const refusal =
        err instanceof Refusal
          ? err
          : new Refusal('internal', `forward failed: ${(err as Error).message}`, 'forward_error');
      return this.answerError(auth, req, refusal);
    }
    return this.answerOk(auth, req, result.first);
  }

  /** An accepted publish's answer: `publish_ok` or a binary ack (null when none is owed). */
  private answerOk(auth: Negotiated, req: PublishRequest, first: number): Uint8Array | null {
    if (req.requestId === undefined) return null;
    const withOffset = has(auth.flags, FLAG_BINARY_PUBLISH_ACK_OFFSET);
    if (req.json) {
      return jsonFrame({
        type: 'publish_ok',
        request_id: req.requestId,
        ...(withOffset ? { offset: first } : {}),
      });
    }
    return ackFrame(auth.flags, {
      ok: true,
      requestId: req.requestId,
      offset: withOffset ? first : undefined,
    });
  }

  /** The refusal a failed publish is answered with: a quorum wait that ended, or storage. */
  private publishFailure(err: unknown, shard: string): Refusal {
    if (err instanceof QuorumTimeoutError)
      return new Refusal('quorum_timeout', err.message, 'quorum_timeout');
    if (err instanceof QuorumAbandonedError)
      return new Refusal('leadership_lost', err.message, 'quorum_abandoned');
    // A poisoned log refuses every append: its failed fsync was logged when it happened
    // (util/sync-watch-io.ts), so each refusal after it is not a line of its own.
    if (err instanceof LogPoisonedError) this.deps.log.debug({ err, shard }, 'append refused');
    else this.deps.log.error({ err, shard }, 'append failed');
    const message = `append failed: ${(err as Error).message}`;
    return new Refusal('storage', message, 'storage_error');
  }

  /** A refused publish: counted, and answered when an answer is owed. */
  private answerError(auth: Negotiated, req: PublishRequest, refusal: Refusal): Uint8Array | null {
    this.deps.metrics.publishErrors.inc({ code: refusal.wireCode });
    if (req.requestId === undefined) return null;
    if (req.json) {
      const withCodes = (auth.features & FEATURE_ERROR_CODES) !== 0;
      return jsonFrame({
        type: 'publish_error',
        request_id: req.requestId,
        message: refusal.message,
        ...(withCodes ? { code: refusal.wireCode, retry: refusal.wireRetry } : {}),
        ...(withCodes && refusal.detail !== undefined ? { detail: refusal.detail } : {}),
      });
    }
    return ackFrame(auth.flags, {
      ok: false,
      requestId: req.requestId,
      message: refusal.message,
      code: refusal.wireCode,
      retry: refusal.wireRetry,
    });
  }
}
