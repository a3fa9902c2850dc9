/**
 * A scripted broker behind a fake transport Connection, for unit tests of the client's whole
 * path (auth, requests, subscriptions, reauth) without sockets. It speaks the JSON layouts only
 * (it grants no binary flag), records every message the client sent with the stream it came on,
 * and answers what a test's `answer` hook does not take over with a plain success.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FEATURE_EXTENDED,
  FEATURE_REDIRECT,
  FEATURE_SHARD_MOVED,
  FEATURE_SHARD_OWNERS,
  FEATURE_TOPOLOGY,
  FEATURE_HI_CACHE_BINARY,
  FEATURE_HI_GROUP_BINARY,
  FEATURE_HI_REAUTH,
  FrameDecoder,
  type Message,
  decodeMessage,
  encodeMessage,
} from '@felix/wire';
import { FelixClient } from '../src/client.js';
import { BrokerConnection, type ConnectionOptions } from '../src/protocol/broker-connection.js';
import type { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { CLIENT_FEATURES, CLIENT_FEATURES_HI } from '../src/protocol/negotiation.js';

const CLUSTER_FEATURES =
  FEATURE_TOPOLOGY | FEATURE_SHARD_OWNERS | FEATURE_REDIRECT | FEATURE_SHARD_MOVED;

/** One direction of a fake stream: chunks in order, then an end. */
class Chunks implements AsyncIterator<Uint8Array> {
  private readonly queued: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private ended = false;

  push(c: Uint8Array): void {
    this.queued.push(c);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      const c = this.queued.shift();
      if (c !== undefined) return { value: c, done: false };
      if (this.ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }

  async return(): Promise<IteratorResult<Uint8Array>> {
    this.end();
    return { value: undefined, done: true };
  }
}

let nextStreamId = 1;

/** The client's end of a fake stream; what it writes goes to `onWrite`. */
export class FakeStream implements TransportStream {
  readonly id = nextStreamId++;
  readonly inbound = new Chunks();
  readonly closed = Promise.resolve();
  isReset = false;

  constructor(
    readonly kind: 'bidi' | 'uni',
    private readonly onWrite: (bytes: Uint8Array) => void,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.inbound;
  }
  async write(chunk: Uint8Array): Promise<void> {
    this.onWrite(chunk);
  }
  async end(): Promise<void> {}
  reset(): void {
    this.isReset = true;
    this.inbound.end();
  }
  /** Sends a message from the broker on this stream. */
  send(msg: Message): void {
    this.inbound.push(encodeMessage(msg));
  }
}

export interface Received {
  stream: FakeStream;
  msg: Message;
}

export class FakeBroker {
  /** Every message the client sent, in order, with its stream. */
  readonly received: Received[] = [];
  /** Event streams by subscription id. */
  readonly events = new Map<number, FakeStream>();
  private readonly opened: FakeStream[] = [];
  /** Every stream of the connection (ended when it dies). */
  private readonly streams: FakeStream[] = [];
  private accept: ((s: FakeStream) => void) | null = null;
  private closeConn!: (info: { code: number; reason: string }) => void;
  readonly conn: Connection;
  /** A test's own answer to a message; returning true means it answered (or chose silence). */
  answer: (at: FakeStream, msg: Message) => boolean = () => false;
  /** What `topology` answers (empty: a single node) and what `shard_owners` answers. */
  topology: Array<{ node_id: string; addr: string }> = [];
  owners: Array<{ shard: number; node_id?: string; addr?: string; generation: number }> = [];
  /** What the transport reports received (undefined: no count, as before). */
  packetsReceived: number | undefined = undefined;
  /** What the transport reports this client sent, and holds unsent (with packetsReceived). */
  bytesSent = 0;
  sendBufferedBytes = 0;

  constructor(
    readonly opts: {
      reauth: boolean;
      cluster?: boolean;
      hiWithout?: number;
      transport?: 'quic' | 'tls';
    },
  ) {
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      this.closeConn = resolve;
    });
    this.conn = {
      remote: 'fake:1',
      transport: opts.transport ?? 'quic',
      openBidi: async () => this.open(),
      openUni: async () => {
        throw new Error('the client opens no uni stream');
      },
      incoming: () => ({ [Symbol.asyncIterator]: () => this.uniStreams() }),
      close: async () => this.closeConn({ code: 0, reason: 'closed' }),
      closed,
      // Packets only when a test counts them (the client's silence check is off otherwise).
      stats: () =>
        (this.packetsReceived === undefined
          ? {}
          : {
              packetsReceived: this.packetsReceived,
              bytesSent: this.bytesSent,
              sendBufferedBytes: this.sendBufferedBytes,
            }) as never,
      peerCertificate: () => undefined,
    };
  }

  /** Ends the connection as a dead broker would: every stream of it ends too. */
  kill(): void {
    this.closeConn({ code: 1, reason: 'killed' });
    for (const s of this.streams) s.inbound.end();
  }

  /** Ends every stream the client opened (our half-close) and keeps the connection, as a
   *  stopping broker does once it has answered all it read (its stream-finish.ts). */
  endRequestStreams(): void {
    for (const s of this.streams) if (s.kind === 'bidi') s.inbound.end();
  }

  /** The `token` of every `auth` the client sent, in order. */
  get authTokens(): string[] {
    return this.received.flatMap(({ msg }) => (msg.type === 'auth' ? [msg.token] : []));
  }

  /** Every `reauth` the client sent. */
  get reauths(): Array<Extract<Message, { type: 'reauth' }>> {
    return this.received.flatMap(({ msg }) => (msg.type === 'reauth' ? [msg] : []));
  }

  private open(): FakeStream {
    const decoder = new FrameDecoder();
    const s: FakeStream = new FakeStream('bidi', (bytes) => {
      for (const f of decoder.push(bytes)) this.handle(s, decodeMessage(f.payload));
    });
    this.streams.push(s);
    return s;
  }

  private uniStreams(): AsyncIterator<TransportStream> {
    const pending = this.opened;
    return {
      next: async () => {
        const s = pending.shift();
        if (s !== undefined) return { value: s, done: false };
        return new Promise((resolve) => {
          this.accept = (stream) => resolve({ value: stream, done: false });
        });
      },
    };
  }

  /** Opens an event stream toward the client (as the broker does for a subscription or a
   *  cache watch) and sends its `event_stream_hello`. */
  openEvents(subscriptionId: number): FakeStream {
    const events = this.openUni();
    this.events.set(subscriptionId, events);
    events.send({ type: 'event_stream_hello', subscription_id: subscriptionId });
    return events;
  }

  private openUni(): FakeStream {
    const s = new FakeStream('uni', () => undefined);
    this.streams.push(s);
    const accept = this.accept;
    this.accept = null;
    if (accept) accept(s);
    else this.opened.push(s);
    return s;
  }

  /** Sends records on a subscription's event stream (JSON `event_batch`). */
  emit(subscriptionId: number, baseOffset: number, payloads: string[]): void {
    const s = this.events.get(subscriptionId)!;
    const scope = { tenant_id: 't1', namespace: 'default', stream: 'orders' };
    const bytes = payloads.map((p) => new TextEncoder().encode(p));
    s.send({ type: 'event_batch', ...scope, payloads: bytes, base_offset: baseOffset });
  }

  private handle(at: FakeStream, msg: Message): void {
    this.received.push({ stream: at, msg });
    if (this.answer(at, msg)) return;
    switch (msg.type) {
      case 'auth': {
        // It reads and answers JSON only: never the binary cache or group exchanges.
        const offered = CLIENT_FEATURES_HI & ~(FEATURE_HI_CACHE_BINARY | FEATURE_HI_GROUP_BINARY);
        const hi =
          (this.opts.reauth ? offered : offered & ~FEATURE_HI_REAUTH) & ~(this.opts.hiWithout ?? 0);
        at.send({
          type: 'auth_ok',
          server_flags: 0,
          // Discovery only when the test plays a cluster member (an older broker offers none).
          server_features:
            ((this.opts.cluster ? CLIENT_FEATURES : CLIENT_FEATURES & ~CLUSTER_FEATURES) |
              FEATURE_EXTENDED) >>>
            0,
          server_features_hi: hi,
          publish_window: 16,
        });
        return;
      }
      case 'reauth':
        at.send({ type: 'reauth_ok', request_id: msg.request_id });
        return;
      case 'cache_shards':
        // Its caches are one shard each: a prefix watch stays one watch.
        at.send({ type: 'cache_shards_view', shards: 1, request_id: msg.request_id });
        return;
      case 'subscribe': {
        const id = msg.subscription_id!;
        at.send({ type: 'subscribed', subscription_id: id, start_offset: 0, live_offset: 0 });
        this.openEvents(id);
        return;
      }
      case 'publish_batch':
        at.send({ type: 'publish_ok', request_id: msg.request_id!, offset: 0 });
        return;
      case 'topology':
        at.send({ type: 'topology_view', brokers: this.topology });
        return;
      case 'shard_owners':
        at.send({ type: 'shard_owners_view', owners: this.owners, request_id: msg.request_id });
        return;
      case 'counter_add':
        at.send({ type: 'counter_value', value: msg.delta, request_id: msg.request_id });
        return;
      default:
        throw new Error(`the fake broker has no answer to ${msg.type}`);
    }
  }
}

/** A client of `broker` whose connect and request timeouts are both `boundMs`. */
export function clientOver(broker: FakeBroker, boundMs: number): Promise<FelixClient> {
  return FelixClient.create(
    {
      servers: ['quic://fake:1'],
      tenant: 't1',
      token: 'x',
      connectTimeoutMs: boundMs,
      requestTimeoutMs: boundMs,
    },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
}

/**
 * Makes `broker` refuse every message of `types` with `overloaded` (retry after a backoff),
 * answering the request's id when it has one; answers the count refused so far, per type.
 */
export function refuseOverloaded<const T extends string>(
  broker: FakeBroker,
  types: readonly T[],
): { [K in T]: number } {
  const refused = Object.fromEntries(types.map((t) => [t, 0])) as { [K in T]: number };
  broker.answer = (at, msg) => {
    if (!(types as readonly string[]).includes(msg.type)) return false;
    const t = msg.type as T;
    refused[t] = (refused[t] ?? 0) + 1;
    const id = (msg as { request_id?: number }).request_id;
    at.send({
      type: 'error',
      code: 'overloaded',
      message: 'busy',
      retry: 'retry_after',
      ...(id === undefined ? {} : { request_id: id }),
    } as Message);
    return true;
  };
  return refused;
}

/** Fake brokers by address: each open of an address makes a new one (a restarted broker). */
export function fakeCluster(setup: (addr: string, b: FakeBroker) => void) {
  const opened: Record<string, FakeBroker[]> = {};
  const open = async (server: string, o: ConnectionOptions, turn: TurnBatcher) => {
    const b = new FakeBroker({ reauth: false, cluster: true });
    setup(server, b);
    (opened[server] ??= []).push(b);
    return BrokerConnection.over(server, b.conn, o, turn);
  };
  return { opened, open, last: (addr: string) => opened[addr]?.at(-1) };
}
