// Goal: a cache put forwarded to its shard's owner (a client with `routing: false`, or an owner
// that moved) keeps the TTL the client asked for. `ttlMs: 0` means "never expires" (client
// README, "Caches, counters and consumer groups": "ttlMs 0: never expires; without ttlMs: never,
// unless ... default_ttl_ms"), and an owner serving the put itself honours it
// (cache-requests.ts: `msg.ttl_ms ?? cfg.default_ttl_ms`).
// Method: the non-owner's real forward half (forwardCacheWrite, caches/forward.ts) whose
// forwarder hands the op it builds to the owner's real ForwardServer (as the internal listener
// would), over an in-memory cache declared with a default TTL; the stored entry's expiry is read
// back from the owner's cache. Both halves map "no TTL" and "TTL 0" onto the same `ttlMs: 0`, and
// the owner reads 0 as "none given", so the cache's default TTL is applied to a value the client
// asked never to expire.
import { TestTenants } from '@felix/testing-e2e';
import { tempDir } from '@felix/testing-harness';
import type { Connection, TransportStream } from '@felix/transport';
import {
  type InternalMessage,
  InternalFrameDecoder,
  type Message,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProjectionAnswers } from '../src/caches/answers.js';
import { CacheService } from '../src/caches/cache-service.js';
import { type ForwardedWrite, forwardCacheWrite } from '../src/caches/forward.js';
import { ProjectionMetrics } from '../src/caches/projection-metrics.js';
import type { StreamRuntime } from '../src/catalog/catalog.js';
import { ForwardServer } from '../src/cluster/forward-server.js';
import { loadConfig } from '../src/config/load.js';
import { BrokerMetrics } from '../src/metrics.js';
import { AnswerPipe } from '../src/session/answer-pipe.js';
import { Authenticator } from '../src/session/authenticator.js';
import type { RequestContext } from '../src/session/handler.js';
import type { Negotiated } from '../src/session/negotiation.js';
import { NotLeaderRefusal } from '../src/session/refusal.js';

const log = pino({ level: 'silent' });
const UTF8 = new TextEncoder();
const DEFAULT_TTL_MS = 600_000;

let dir: { path: string; cleanup: () => Promise<void> };
let tenants: TestTenants;
let authenticator: Authenticator;

beforeAll(async () => {
  dir = await tempDir('felix-forward-ttl-');
  tenants = await TestTenants.create(['t1']);
  const keysFile = await tenants.writeKeysFile(dir.path);
  const cfg = loadConfig({ FELIX_AUTH_MODE: 'tokens', FELIX_AUTH_KEYS_FILE: keysFile });
  authenticator = await Authenticator.create(cfg, log, async () => null);
});
afterAll(async () => {
  await dir.cleanup();
});

/** The owner `b1` of cache t1/default/sessions (one shard, in memory, a default TTL). */
function owner() {
  const caches = new CacheService(loadConfig({}));
  caches.define({
    tenant: 't1',
    namespace: 'default',
    name: 'sessions',
    shards: 1,
    durable: false,
    default_ttl_ms: DEFAULT_TTL_MS,
  });
  const server = new ForwardServer({
    selfId: 'b1',
    authenticator,
    route: () => ({ view: { leader: 'b1', generation: 3 }, serving: true }),
    leaseGap: () => null,
    peerAddress: (id) => `${id}.internal:5001`,
    streams: () => ({ config: { shards: 1 }, shards: [] }) as unknown as StreamRuntime,
    caches,
    metrics: new BrokerMetrics(),
    draining: () => false,
    log,
  });
  return { server, caches };
}

async function ask(server: ForwardServer, m: InternalMessage): Promise<InternalMessage> {
  const frame = new InternalFrameDecoder().push(encodeInternalMessage(m))[0]!;
  const answer = await server.handle(frame);
  return decodeInternalMessage(new InternalFrameDecoder().push(answer)[0]!);
}

/** The non-owner's side: forwards `msg` as a session of a client holding `token` would. */
async function forwardFromNonOwner(server: ForwardServer, token: string, msg: ForwardedWrite) {
  const to = new NotLeaderRefusal(
    {
      kind: 'cache',
      tenant: 't1',
      namespace: 'default',
      name: 'sessions',
      shard: 0,
      nodeId: 'b1',
      generation: 3,
      addr: undefined,
    },
    'led by b1',
  );
  let correlationId = 0;
  const slot = {
    current: {
      // What the Forwarder sends for it (cluster/forwarder.ts, cacheOp), answered by the owner.
      cacheOp: async (_to: unknown, op: object, credential: string) => {
        const answer = await ask(server, {
          kind: 'AuthorizedForwardCacheOp',
          correlationId: ++correlationId,
          shard: {
            tenantId: 't1',
            namespace: 'default',
            stream: 'sessions',
            shard: 0,
            generation: 3,
          },
          ...op,
          credential: UTF8.encode(credential),
        } as InternalMessage);
        if (answer.kind !== 'ForwardCacheOk') throw new Error(`forward refused: ${answer.kind}`);
        return answer.value;
      },
    },
  };
  const brokerMetrics = new BrokerMetrics();
  const answers = new ProjectionAnswers(
    new ProjectionMetrics(brokerMetrics.registry),
    brokerMetrics,
  );
  const written: Uint8Array[] = [];
  const stream = {
    write: (chunk: Uint8Array) => {
      written.push(chunk);
      return Promise.resolve();
    },
  } as unknown as TransportStream;
  const pipe = new AnswerPipe(stream, 64);
  const auth: Negotiated = {
    tenant: 't1',
    flags: 0,
    features: 0,
    featuresHi: 0,
    negotiating: false,
  };
  const rc = {
    auth,
    principal: 't1',
    grant: { token },
    conn: {} as Connection,
    stream,
    answers: pipe,
    quiet: false,
    ended: false,
  } as unknown as RequestContext;
  // The non-owner's catalog gives the cache its default TTL too, as the owner's does.
  const forward = forwardCacheWrite(slot as never, answers, () => true);
  const outcome = forward(msg, rc, to);
  if (outcome instanceof Promise) await outcome;
  await pipe.drain();
  return written;
}

const put = (key: string, ttl_ms?: number): Extract<Message, { type: 'cache_put' }> => ({
  type: 'cache_put',
  tenant_id: 't1',
  namespace: 'default',
  cache: 'sessions',
  key,
  value: UTF8.encode('v'),
  request_id: 1,
  ...(ttl_ms === undefined ? {} : { ttl_ms }),
});

describe('a cache put forwarded to its owner', () => {
  it('a_put_forwarded_to_the_owner_with_ttl_0_never_expires_on_a_cache_with_a_default_ttl', async () => {
    const { server, caches } = owner();
    try {
      const token = await tenants.mint('t1');
      const stored = caches.memoryCache(caches.lookup('t1', 'default', 'sessions'), 0)!;
      // Control: without a TTL the cache's default applies, forwarded or not.
      await forwardFromNonOwner(server, token, put('no-ttl'));
      const defaulted = await stored.getEntry('no-ttl');
      expect(defaulted).toBeDefined();
      expect(defaulted!.expiresAtMillis).toBeGreaterThan(0);
      // An explicit TTL of 0 is "never expires": the owner must store it without an expiry, as
      // it does for the same put sent to it directly.
      await forwardFromNonOwner(server, token, put('forever', 0));
      const forever = await stored.getEntry('forever');
      expect(forever).toBeDefined();
      expect(forever!.expiresAtMillis).toBe(0);
    } finally {
      await caches.close();
    }
  });
});
