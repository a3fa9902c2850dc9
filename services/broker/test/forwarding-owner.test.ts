// Goal: the owner of a shard trusts a forwarded write no more than a client's request: it
// verifies the client's token and its permissions before anything is written, and judges the
// route by generation (the sender behind → NotLeader; itself behind → StaleRoute; not the leader
// → NotLeader naming the leader, never relayed).
// Method: the broker's ForwardServer in process, with the broker's real Authenticator over a keys
// file of test tenants (tokens minted with their keys), an in-memory stream shard and an
// in-memory cache; forward frames built with @felix/wire and their answers decoded.
import { TestTenants } from '@felix/testing-e2e';
import { tempDir } from '@felix/testing-harness';
import {
  CACHE_OP,
  FORWARD_ACK,
  INTERNAL_ERROR,
  InternalFrameDecoder,
  type InternalMessage,
  decodeInternalMessage,
  encodeInternalMessage,
} from '@felix/wire';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CacheService } from '../src/caches/cache-service.js';
import type { StreamRuntime } from '../src/catalog/catalog.js';
import { ForwardServer } from '../src/cluster/forward-server.js';
import { loadConfig } from '../src/config/load.js';
import { BrokerMetrics } from '../src/metrics.js';
import { Authenticator } from '../src/session/authenticator.js';
import { Shard } from '../src/streams/shard.js';

const log = pino({ level: 'silent' });
const UTF8 = new TextEncoder();
const hooks = { onDrop: () => undefined, onApply: () => undefined };
const ref = (generation: number, stream = 'orders') => ({
  tenantId: 't1',
  namespace: 'default',
  stream,
  shard: 0,
  generation,
});

let dir: { path: string; cleanup: () => Promise<void> };
let tenants: TestTenants;
let authenticator: Authenticator;

beforeAll(async () => {
  dir = await tempDir('felix-forward-owner-');
  tenants = await TestTenants.create(['t1', 't2']);
  const keysFile = await tenants.writeKeysFile(dir.path);
  const cfg = loadConfig({ FELIX_AUTH_MODE: 'tokens', FELIX_AUTH_KEYS_FILE: keysFile });
  authenticator = await Authenticator.create(cfg, log, async () => null);
});
afterAll(async () => {
  await dir.cleanup();
});

/** An owner `b1` of t1/default/orders shard 0 and of cache users, as `view` says. */
function owner(view: { leader: string; generation: number }) {
  const cfg = loadConfig({});
  const caches = new CacheService(cfg);
  caches.define({
    tenant: 't1',
    namespace: 'default',
    name: 'users',
    shards: 1,
    durable: false,
    default_ttl_ms: null,
  });
  const shard = new Shard('t1/default/orders/0', null, { records: 100, bytes: 1 << 20 }, hooks);
  const runtime = { config: { shards: 1 }, shards: [shard] } as unknown as StreamRuntime;
  const server = new ForwardServer({
    selfId: 'b1',
    authenticator,
    route: () => ({ view, serving: view.leader === 'b1' }),
    leaseGap: () => null,
    peerAddress: (id) => `${id}.internal:5001`,
    streams: () => runtime,
    caches,
    metrics: new BrokerMetrics(),
    draining: () => false,
    log,
  });
  return { server, shard, caches };
}

async function ask(server: ForwardServer, m: InternalMessage): Promise<InternalMessage> {
  const frame = new InternalFrameDecoder().push(encodeInternalMessage(m))[0]!;
  const answer = await server.handle(frame);
  return decodeInternalMessage(new InternalFrameDecoder().push(answer)[0]!);
}

const publish = (token: string | undefined, generation = 3): InternalMessage => ({
  kind: token === undefined ? 'ForwardPublish' : 'AuthorizedForwardPublish',
  correlationId: 9,
  shard: ref(generation),
  ack: FORWARD_ACK.OnAccept,
  payloads: [UTF8.encode('a'), UTF8.encode('b')],
  ...(token === undefined ? {} : { credential: UTF8.encode(token) }),
});

const put = (token: string): InternalMessage => ({
  kind: 'AuthorizedForwardCacheOp',
  correlationId: 10,
  shard: ref(3, 'users'),
  op: CACHE_OP.Put,
  key: 'alice',
  ttlMs: 0,
  value: UTF8.encode('v1'),
  credential: UTF8.encode(token),
});

describe('the owner of a forwarded write', () => {
  it('a_forward_is_refused_where_the_token_lacks_permission', async () => {
    const { server, shard, caches } = owner({ leader: 'b1', generation: 3 });
    const readOnly = await tenants.mint('t1', {
      permissions: ['stream.subscribe:stream:t1/*/*', 'cache.read:cache:t1/*/*'],
    });
    const unauthorized = { code: INTERNAL_ERROR.Unauthorized, correlationId: 9 };
    expect(await ask(server, publish(readOnly))).toMatchObject({
      kind: 'ForwardPublishError',
      ...unauthorized,
    });
    expect(await ask(server, put(readOnly))).toMatchObject({
      kind: 'ForwardCacheError',
      code: INTERNAL_ERROR.Unauthorized,
    });
    // A token of another tenant, and a forward without the client's token, are refused too.
    const foreign = await tenants.mint('t2');
    expect(await ask(server, publish(foreign))).toMatchObject(unauthorized);
    expect(await ask(server, publish(undefined))).toMatchObject(unauthorized);
    // Nothing was written by any of them.
    expect(shard.appliedNext).toBe(0);
    const users = caches.memoryCache(caches.lookup('t1', 'default', 'users'), 0)!;
    expect(await users.get('alice')).toBeUndefined();
    // The same requests with a token that grants them are done.
    const writer = await tenants.mint('t1');
    expect(await ask(server, publish(writer))).toEqual({
      kind: 'ForwardPublishOk',
      correlationId: 9,
      firstOffset: 0,
      lastOffset: 1,
    });
    expect(await ask(server, put(writer))).toEqual({ kind: 'ForwardCacheOk', correlationId: 10 });
    expect(shard.appliedNext).toBe(2);
    expect(new TextDecoder().decode(await users.get('alice'))).toBe('v1');
  });

  it('an_owner_judges_a_forward_by_generation_and_never_relays_it', async () => {
    const writer = await tenants.mint('t1');
    const { server, shard } = owner({ leader: 'b1', generation: 3 });
    // The sender is behind: it hears who leads at the newer generation.
    expect(await ask(server, publish(writer, 2))).toEqual({
      kind: 'NotLeader',
      correlationId: 9,
      nodeId: 'b1',
      advertiseAddr: 'b1.internal:5001',
      generation: 3,
    });
    // The owner is behind: the sender must wait for it.
    expect(await ask(server, publish(writer, 4))).toMatchObject({
      kind: 'ForwardPublishError',
      code: INTERNAL_ERROR.StaleRoute,
    });
    expect(shard.appliedNext).toBe(0);
    // A broker that does not lead the shard names the leader instead of forwarding again.
    const other = owner({ leader: 'b2', generation: 3 });
    expect(await ask(other.server, publish(writer, 3))).toEqual({
      kind: 'NotLeader',
      correlationId: 9,
      nodeId: 'b2',
      advertiseAddr: 'b2.internal:5001',
      generation: 3,
    });
    expect(other.shard.appliedNext).toBe(0);
  });
});
