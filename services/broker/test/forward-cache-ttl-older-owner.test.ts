// Goal: a broker upgraded to d23bdb38 still forwards cache puts that a broker of the release
// before it (an older owner, during a rolling upgrade) takes. d23bdb38 sends a put's explicit
// `ttl_ms: 0` as FORWARD_TTL_NEVER_MS (2^53 - 1) in the internal ForwardCacheOp; an owner from
// before it reads any non-zero ttlMs as the client's TTL (cacheMessage: `ttl_ms: m.ttlMs`) and
// checks it against CACHE_TTL_MS_MAX (2^45), refusing the put as `bad_ttl`: before the upgrade the
// same put was stored. No peer feature gates the sentinel.
// Method: the new non-owner's real forward half (forwardCacheWrite) handing the op it builds to
// the ForwardServer of c1e5381 (test/support/forward-server-c1e5381.ts, the file as it was), over
// an in-memory cache without a default TTL.
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
import { ForwardServer } from './support/forward-server-c1e5381.js';
import { loadConfig } from '../src/config/load.js';
import { BrokerMetrics } from '../src/metrics.js';
import { AnswerPipe } from '../src/session/answer-pipe.js';
import { Authenticator } from '../src/session/authenticator.js';
import type { RequestContext } from '../src/session/handler.js';
import type { Negotiated } from '../src/session/negotiation.js';
import { NotLeaderRefusal } from '../src/session/refusal.js';

const log = pino({ level: 'silent' });
const UTF8 = new TextEncoder();

let dir: { path: string; cleanup: () => Promise<void> };
let tenants: TestTenants;
let authenticator: Authenticator;

beforeAll(async () => {
  dir = await tempDir('felix-forward-ttl-old-');
  tenants = await TestTenants.create(['t1']);
  const keysFile = await tenants.writeKeysFile(dir.path);
  const cfg = loadConfig({ FELIX_AUTH_MODE: 'tokens', FELIX_AUTH_KEYS_FILE: keysFile });
  authenticator = await Authenticator.create(cfg, log, async () => null);
});
afterAll(async () => {
  await dir.cleanup();
});

/** An older owner `b1` of cache t1/default/sessions (one shard, in memory, no default TTL). */
function owner() {
  const caches = new CacheService(loadConfig({}));
  caches.define({
    tenant: 't1',
    namespace: 'default',
    name: 'sessions',
    shards: 1,
    durable: false,
    default_ttl_ms: null,
  });
  const server = new ForwardServer({
    selfId: 'b1',
    authenticator,
    route: () => ({ view: { leader: 'b1', generation: 3 }, serving: true }),
    leaseLapsed: () => false,
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
        if (answer.kind !== 'ForwardCacheOk')
          throw new Error(`forward refused: ${answer.kind} ${JSON.stringify(answer)}`);
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
  const forward = forwardCacheWrite(slot as never, answers);
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

describe('a cache put forwarded to an owner of the previous release', () => {
  it('a_put_with_ttl_0_forwarded_to_an_owner_of_the_previous_release_is_stored_not_refused', async () => {
    const { server, caches } = owner();
    try {
      const token = await tenants.mint('t1');
      const stored = caches.memoryCache(caches.lookup('t1', 'default', 'sessions'), 0)!;
      // Control: a put without a TTL goes through as it always did.
      await forwardFromNonOwner(server, token, put('no-ttl'));
      expect(await stored.getEntry('no-ttl')).toBeDefined();
      // ttlMs 0 (never expires) was stored by this owner before its peer was upgraded.
      const written = await forwardFromNonOwner(server, token, put('forever', 0)).catch(
        (err: unknown) => err,
      );
      expect(written).not.toBeInstanceOf(Error);
      // What the client is answered: not a refusal (an older owner says `bad_ttl`).
      const said = Buffer.concat(written as Uint8Array[]).toString('latin1');
      expect(said).not.toMatch(/bad_ttl|error|refused/);
      const forever = await stored.getEntry('forever');
      expect(forever).toBeDefined();
      expect(forever!.expiresAtMillis).toBe(0);
    } finally {
      await caches.close();
    }
  });
});
