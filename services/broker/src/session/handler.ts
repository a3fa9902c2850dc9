/**
 * The request edge's contract. Every authenticated request enters through one `HandlerTable`:
 * streams, caches, counters and groups register a handler per message type (and the publish
 * frame layout), and the session looks the request up once, passes it through `admit`
 * (admission.ts) and calls the handler with the stream's `RequestContext`.
 *
 * A handler answers in request order through the context's AnswerPipe (or, for a request that
 * first drains it, on the stream), and returns null; or it returns one `Refusal`, which the
 * session writes as an `error` (ending the stream when the refusal says so). Handlers that answer
 * later (an append, a read) build their answers in their pipe entry, refusals included.
 */
import { assert } from '@felix/common';
import type { Connection, TransportStream } from '@felix/transport';
import { FEATURE_HI_REAUTH, FEATURE_HI_STREAM_END_NOTICE, type Message } from '@felix/wire';
import { type Access, OPEN, REQUEST_ACCESS } from './access.js';
import type { ConnectionGrant } from './grant.js';
import type { AnswerPipe } from './answer-pipe.js';
import type { InboundFrame } from './codec.js';
import type { Negotiated } from './negotiation.js';
import { type NotLeaderRefusal, Refusal } from './refusal.js';

/** What a handler is told about the request's stream: one object per client stream. */
export interface RequestContext {
  /** The tenant, frame layouts and features the stream authenticated with. */
  readonly auth: Negotiated;
  /** Who sent it: the token's subject (the tenant in dev mode). */
  readonly principal: string;
  /** The connection's principal and permissions (shared by its streams; a reauth replaces it). */
  readonly grant: ConnectionGrant;
  /** Verifies a fresh token of the same principal and answers `reauth_ok` (or refuses). */
  reauthenticate(msg: Extract<Message, { type: 'reauth' }>): Promise<Outcome>;
  readonly conn: Connection;
  readonly stream: TransportStream;
  /** Answers in request order, within the publish window. */
  readonly answers: AnswerPipe;
  /** A publish-only (uni) stream: the broker never answers on it. */
  readonly quiet: boolean;
  /** The stream has ended: a request still waiting (a long poll) must not act for it. */
  readonly ended: boolean;
  /** The stream is being ended for its token (expired, or a narrower one no longer allows what
   *  it opened): a subscription or watch still opening must not open. */
  readonly ending: boolean;
  /** Runs `release` when this stream ends (e.g. subscriptions it opened stop). */
  onStreamEnd(release: () => void): void;
}

export type Outcome = Refusal | null;

/** How a request type may arrive on a publish-only stream, which carries only publishes. */
export type OnPublishOnly =
  /** Served (publishes). */
  | 'serve'
  /** Refused as a request on a publish-only stream (`uni_request`). */
  | 'refuse'
  /** Refused as an unsupported request, as the broker always answered caches and groups there. */
  | 'unsupported';

/**
 * Where the edge finds the shard a request names, for the ownership decision in `admit`:
 * 'message' when the message names it (cache key or shard, a group's shard); 'handler' when
 * only the handler can (a publish routes its key first) and the handler asks the ownership
 * check itself, after the tenant and stream checks it answers first.
 */
export type ShardLocation = 'message' | 'handler';

export interface Handler<M extends Message = Message> {
  readonly onPublishOnly: OnPublishOnly;
  readonly shardLocation: ShardLocation;
  /** Answers (a promise only when it must wait: a full pipe, an earlier answer, a write). */
  handle(req: M, rc: RequestContext): Outcome | Promise<Outcome>;
  /**
   * A write that admission found led by another broker (`to`): sent to that leader and
   * answered from its answer (cluster/forwarder.ts). Absent: such a request is refused
   * `not_leader` (a read, a watch, a group request: the client goes to the leader itself).
   */
  forward?(req: M, rc: RequestContext, to: NotLeaderRefusal): Outcome | Promise<Outcome>;
}

/** A handler of a binary frame layout (the publish batch). */
export interface FrameHandler {
  handle(frame: InboundFrame, rc: RequestContext): Outcome | Promise<Outcome>;
}

/**
 * Reads a JSON request without the general decoder when its bytes are in one exact form (the
 * cache get, the cache put), or answers undefined. One per stream: it may remember what it read
 * last. A reader checks the opening of its own type first, so it declines another type's
 * request within a few bytes.
 */
export interface FastReader {
  read(payload: Uint8Array): Message | undefined;
}

/**
 * A stream's readers when several types have one: each is tried in the order registered until
 * one answers. The first registered (the get) costs what it cost alone but for this call; a
 * later one pays the earlier ones' declines at their openings' first differing byte.
 */
class FastReaders implements FastReader {
  constructor(private readonly readers: FastReader[]) {}

  read(payload: Uint8Array): Message | undefined {
    const readers = this.readers;
    for (let i = 0; i < readers.length; i++) {
      const msg = readers[i]!.read(payload);
      if (msg !== undefined) return msg;
    }
    return undefined;
  }
}

type MessageOf<T extends Message['type']> = Extract<Message, { type: T }>;

/** A registered request type: its handler and what it needs (auth/access.ts). */
export interface HandlerEntry {
  readonly handler: Handler;
  /** Null for a request any authenticated stream may send. */
  readonly access: Access | null;
}

export class HandlerTable {
  private readonly byType = new Map<string, HandlerEntry>();
  private readonly byLayout = new Map<string, FrameHandler>();
  private readonly fastReaders = new Map<string, () => FastReader>();
  /** Feature bits offered in `auth_ok` for the registered requests (low and high words). */
  features = 0;
  featuresHi = 0;

  constructor() {
    // The session's own request: a stream authenticates once, with its first frame.
    this.register('auth', {
      onPublishOnly: 'serve',
      shardLocation: 'handler',
      handle: () =>
        new Refusal('invalid_request', 'a second auth on one stream', 'second_auth', {
          fatalToStream: true,
        }),
    });
    // A fresh token for the connection, on any stream that may answer (issue 21).
    this.register('reauth', {
      onPublishOnly: 'refuse',
      shardLocation: 'handler',
      handle: (msg, rc) => rc.reauthenticate(msg),
    });
    this.offer(0, FEATURE_HI_REAUTH);
    // Every end of a request stream follows the answers of what was applied (stream-finish.ts).
    this.offer(0, FEATURE_HI_STREAM_END_NOTICE);
  }

  /**
   * Registers `type`'s handler. The type must have a row in the permission table
   * (REQUEST_ACCESS): a request cannot be served without saying what it needs.
   */
  register<T extends Message['type']>(type: T, handler: Handler<MessageOf<T>>): void {
    assert(!this.byType.has(type), `a handler for ${type} is registered twice`);
    const access = REQUEST_ACCESS[type];
    assert(access !== undefined, `request ${type} has no row in the permission table`);
    this.byType.set(type, {
      handler: handler as unknown as Handler,
      access: access === OPEN ? null : access,
    });
  }

  registerFrame(layout: string, handler: FrameHandler): void {
    assert(!this.byLayout.has(layout), `a handler for ${layout} frames is registered twice`);
    this.byLayout.set(layout, handler);
  }

  /**
   * A fast reader of `type`'s requests, tried on every JSON frame of a stream that is not
   * publish-only (in registration order: register the hottest type first).
   */
  registerFastReader(type: Message['type'], create: () => FastReader): void {
    assert(!this.fastReaders.has(type), `a fast reader for ${type} is registered twice`);
    this.fastReaders.set(type, create);
  }

  offer(features: number, featuresHi = 0): void {
    this.features |= features;
    this.featuresHi = (this.featuresHi | featuresHi) >>> 0;
  }

  handler(type: string): Handler | undefined {
    return this.byType.get(type)?.handler;
  }

  entry(type: string): HandlerEntry | undefined {
    return this.byType.get(type);
  }

  frameHandler(layout: string): FrameHandler | undefined {
    return this.byLayout.get(layout);
  }

  /** A new stream's fast reader, or undefined when none is registered. */
  fastReader(): FastReader | undefined {
    const creates = [...this.fastReaders.values()];
    if (creates.length <= 1) return creates[0]?.();
    return new FastReaders(creates.map((create) => create()));
  }
}
