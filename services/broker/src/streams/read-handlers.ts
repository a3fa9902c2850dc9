/**
 * The stream requests that read: `subscribe` (each subscription served on a broker-opened uni
 * stream by a SubscriptionWriter, at most SUBSCRIPTIONS_PER_CONNECTION_MAX per connection, ended
 * with the stream that opened it), `offset_for_time` and `stream_shards`. Each first drains the
 * stream's earlier answers, then answers on the stream itself.
 */
import type { Connection } from '@felix/transport';
import {
  FEATURE_SUBSCRIBE_QUEUE,
  FEATURE_SUBSCRIPTION_LAGGED,
  FLAG_EVENT_BATCH_OFFSETS,
  type Message,
} from '@felix/wire';
import { SUBSCRIPTIONS_PER_CONNECTION_MAX } from '../limits.js';
import { jsonFrame } from '../session/codec.js';
import { NOT_OPENED } from '../session/opened-scopes.js';
import type { Handler, Outcome, RequestContext } from '../session/handler.js';
import { type Negotiated, has } from '../session/negotiation.js';
import { Refusal, drainingRefusal, wrongTenant } from '../session/refusal.js';
import type { StreamDeps } from './deps.js';
import { type ShardHistory, resumeParting } from '../util/log-history.js';
import type { Shard, StartSpec, StreamRuntime } from './shard.js';
import { SubscriptionWriter } from './subscription-writer.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

/** One connection's subscriptions by id. */
class Subscriptions {
  readonly byId = new Map<number, SubscriptionWriter>();
  private nextId = 1;

  allocateId(): number {
    while (this.byId.has(this.nextId)) this.nextId++;
    return this.nextId++;
  }
}

export class ReadHandlers {
  private readonly perConnection = new WeakMap<Connection, Subscriptions>();

  constructor(private readonly deps: StreamDeps) {}

  readonly subscribe: Handler<Msg<'subscribe'>> = {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (msg, rc) => {
      await rc.answers.drain();
      // Its stream is being ended for its token meanwhile (a narrower one, an expiry): it
      // opens nothing; the stream's own refusal answers.
      if (rc.ending) return NOT_OPENED;
      return this.openSubscription(msg, rc);
    },
  };

  readonly offsetForTime: Handler<Msg<'offset_for_time'>> = {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (msg, rc) => {
      await rc.answers.drain();
      return this.answerOffsetForTime(msg, rc);
    },
  };

  readonly streamShards: Handler<Msg<'stream_shards'>> = {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (msg, rc) => {
      await rc.answers.drain();
      const s =
        msg.tenant_id === rc.auth.tenant
          ? this.deps.streams.get(msg.tenant_id, msg.namespace, msg.stream)
          : undefined;
      const view: Message = {
        type: 'stream_shards_view',
        shards: s ? s.shards.length : 0,
        request_id: msg.request_id,
        ...(s?.config.routing === 'jump_hash' ? { routing: 'jump_hash' as const } : {}),
      };
      await rc.stream.write(jsonFrame(view));
      return null;
    },
  };

  /** Answers `offset_for_time` on the shard's leader: `offset_value`, or a refusal. */
  private async answerOffsetForTime(
    msg: Msg<'offset_for_time'>,
    rc: RequestContext,
  ): Promise<Outcome> {
    const served = this.servedShard(rc.auth, msg, msg.shard);
    if (served instanceof Refusal) return served;
    const { shard } = served;
    let offset: number | undefined;
    try {
      offset = await shard.offsetForTime(msg.at_micros);
    } catch (err) {
      this.deps.log.error({ err, shard: shard.name }, 'offset_for_time failed');
      return new Refusal('storage', `read failed: ${(err as Error).message}`, 'storage_error');
    }
    await rc.stream.write(
      jsonFrame({
        type: 'offset_value',
        request_id: msg.request_id,
        ...(offset !== undefined ? { offset } : {}),
      }),
    );
    return null;
  }

  /**
   * The shard of a stream this broker serves to this connection (`subscribe`, `offset_for_time`),
   * or the refusal: another tenant's stream, an unknown stream, a shard out of range, or a shard
   * this broker does not hold (the ownership half of admission, after the checks answered first).
   */
  private servedShard(
    auth: Negotiated,
    msg: { tenant_id: string; namespace: string; stream: string },
    index: number,
  ): { stream: StreamRuntime; shard: Shard } | Refusal {
    if (msg.tenant_id !== auth.tenant) return wrongTenant(auth);
    const s = this.deps.streams.get(msg.tenant_id, msg.namespace, msg.stream);
    if (!s) {
      const message = `stream ${msg.namespace}/${msg.stream} not found`;
      return new Refusal('not_found', message, 'unknown_stream');
    }
    const shard = s.shards[index];
    if (!shard) {
      return new Refusal(
        'invalid_request',
        `shard ${index} out of range (stream has ${s.shards.length})`,
        'shard_out_of_range',
      );
    }
    const unheld = this.deps.ownership?.refuse(
      'stream',
      msg.tenant_id,
      msg.namespace,
      msg.stream,
      index,
    );
    return unheld ?? { stream: s, shard };
  }

  private subscriptions(conn: Connection): Subscriptions {
    let subs = this.perConnection.get(conn);
    if (subs === undefined) {
      subs = new Subscriptions();
      this.perConnection.set(conn, subs);
    }
    return subs;
  }

  private async openSubscription(msg: Msg<'subscribe'>, rc: RequestContext): Promise<Outcome> {
    const { auth } = rc;
    if (this.deps.draining()) return drainingRefusal();
    const shardIndex = msg.shard ?? 0;
    const served = this.servedShard(auth, msg, shardIndex);
    if (served instanceof Refusal) return served;
    const { stream: s, shard } = served;
    const subs = this.subscriptions(rc.conn);
    if (subs.byId.size >= SUBSCRIPTIONS_PER_CONNECTION_MAX) {
      return new Refusal(
        'limit_exceeded',
        `at most ${SUBSCRIPTIONS_PER_CONNECTION_MAX} subscriptions per connection`,
        'subscription_limit',
      );
    }
    const id = msg.subscription_id ?? subs.allocateId();
    if (subs.byId.has(id)) {
      const message = `subscription id ${id} is in use`;
      return new Refusal('invalid_request', message, 'duplicate_subscription');
    }
    const capacity = this.queueCapacity(auth, msg);
    const endOnLag =
      has(auth.features, FEATURE_SUBSCRIPTION_LAGGED) && has(auth.flags, FLAG_EVENT_BATCH_OFFSETS);
    const { start: from, divergedAt } = resumeStart(msg, shard.history);
    const outcome = shard.subscribe(
      from,
      { capacity, bytesMax: this.deps.config.broker.subscriber_queue_bytes },
      endOnLag,
    );
    if (!outcome.ok) {
      this.deps.metrics.badInput.inc({ reason: `cursor_${outcome.reason}` });
      await rc.stream.write(
        jsonFrame({
          type: 'subscribe_cursor_error',
          reason: outcome.reason,
          requested: outcome.requested,
          available: outcome.available,
        }),
      );
      return NOT_OPENED; // answered: nothing opened
    }
    await rc.stream.write(
      jsonFrame(
        subscribedAnswer(auth, id, s.config.durable, shard, outcome.sub, capacity, divergedAt),
      ),
    );
    const writer = new SubscriptionWriter(
      rc.conn,
      this.deps,
      auth,
      id,
      s.config,
      shardIndex,
      outcome.sub,
    );
    start(subs, id, writer, rc);
    return null;
  }

  /** The subscriber queue's capacity: the client's ask when negotiated, within the bound. */
  private queueCapacity(auth: Negotiated, msg: Msg<'subscribe'>): number {
    const bound = this.deps.config.broker.subscriber_queue_capacity;
    if (!has(auth.features, FEATURE_SUBSCRIBE_QUEUE) || msg.queue_capacity === undefined) {
      return bound;
    }
    return Math.min(Math.max(1, msg.queue_capacity), bound);
  }
}

/** Serves the subscription until it ends, or until the stream that opened it ends. */
function start(subs: Subscriptions, id: number, writer: SubscriptionWriter, rc: RequestContext) {
  subs.byId.set(id, writer);
  const forget = () => {
    if (subs.byId.get(id) === writer) subs.byId.delete(id);
  };
  rc.onStreamEnd(() => {
    writer.stop();
    forget();
  });
  void writer.run().finally(forget);
}

/**
 * Where a subscription starts: as asked, or, for a resume at an offset whose history this log
 * parted from below it (a `leader` shard's failover), at the parting point (`divergedAt`); a
 * `quorum` shard's resume never parts (resumeParting).
 */
function resumeStart(
  msg: Msg<'subscribe'>,
  history: ShardHistory | undefined,
): { start: StartSpec; divergedAt?: number } {
  const start = startSpec(msg.start);
  const g = msg.history_generation;
  const from = msg.history_start;
  if (start.kind !== 'offset' || history === undefined || g === undefined || from === undefined)
    return { start };
  const parted = resumeParting(history, g, from);
  if (parted === undefined || parted >= start.offset) return { start };
  return { start: { kind: 'offset', offset: parted }, divergedAt: parted };
}

function startSpec(start: Msg<'subscribe'>['start']): StartSpec {
  if (start === undefined || start === 'latest') return { kind: 'latest' };
  if (start === 'earliest') return { kind: 'earliest' };
  return { kind: 'offset', offset: start.offset };
}

/** The `subscribed` answer: where the subscription starts, and what this client reads of it. */
function subscribedAnswer(
  auth: Negotiated,
  id: number,
  durable: boolean,
  shard: Shard,
  sub: { startOffset: number; liveOffset: number },
  capacity: number,
  divergedAt: number | undefined,
): Message {
  const withOffsets = has(auth.flags, FLAG_EVENT_BATCH_OFFSETS);
  return {
    type: 'subscribed',
    subscription_id: id,
    ...(withOffsets ? { start_offset: sub.startOffset, live_offset: sub.liveOffset } : {}),
    ...(has(auth.features, FEATURE_SUBSCRIBE_QUEUE) ? { queue_capacity: capacity } : {}),
    // An in-memory shard's offsets begin again with each shard made: say which incarnation.
    ...(withOffsets && !durable ? { offsets_epoch: shard.offsetsEpoch } : {}),
    // A replicated shard's: the history a later resume names (util/log-history.ts).
    ...(withOffsets && shard.history !== undefined
      ? { generation: shard.history.generation, generation_start: shard.history.start }
      : {}),
    ...(divergedAt !== undefined ? { diverged_at: divergedAt } : {}),
  };
}
