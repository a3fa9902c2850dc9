// Goal: a broker started with FELIX_CONTROLPLANE_URL serves exactly the shards the control plane
// assigns it (created, refused when another node leads them, closed when deleted), is ready only
// after its first snapshots, deregisters on SIGTERM; without the variable the YAML catalog serves.
// Method: real processes from the built dist/ of both services (control plane on SQLite in a
// temp dir), streams made through the REST API, @felix/client for publish and subscribe.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type BrokerRefusedError, type FelixClient, connect } from '@felix/client';
import { type Child, freePort, tempDir, waitFor } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import {
  FEATURE_ERROR_CODES,
  FrameDecoder,
  decodeMessage,
  encodeMessage,
  shardForKey,
} from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BROKER_MAIN,
  CP_MAIN,
  OPERATOR_PERMISSIONS,
  type Running,
  SETTLE_MS,
  bootstrapToken,
  heldShards,
  nodeToken,
  readyStatus,
  startClusterBroker,
  startControlPlane,
} from './support/cluster.js';

const TEXT = new TextDecoder();

function client(b: Running, namespace: string, routing = true): Promise<FelixClient> {
  return connect({
    servers: [`quic://127.0.0.1:${b.port}`],
    tenant: 'acme',
    namespace,
    tls: { fingerprint: b.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
    routing,
  });
}

/** Subscribes on a raw authenticated stream and returns the broker's first answer. */
async function rawSubscribe(b: Running, stream: string, shard: number): Promise<unknown> {
  const conn = await dial(`quic://127.0.0.1:${b.port}`, { fingerprint: b.fingerprint });
  try {
    const s = await conn.openBidi();
    const decoder = new FrameDecoder();
    const it = s[Symbol.asyncIterator]();
    const next = async (): Promise<unknown> => {
      for (;;) {
        const r = await it.next();
        if (r.done) return null;
        const f = decoder.push(r.value)[0];
        if (f) return decodeMessage(f.payload);
      }
    };
    await s.write(
      encodeMessage({
        type: 'auth',
        tenant_id: 'acme',
        token: '',
        client_flags: 0x1fff,
        client_features: FEATURE_ERROR_CODES,
      }),
    );
    expect(await next()).toMatchObject({ type: 'auth_ok' });
    await s.write(
      encodeMessage({ type: 'subscribe', tenant_id: 'acme', namespace: 'prod', stream, shard }),
    );
    return await next();
  } finally {
    await conn.close({ code: 0, reason: 'done' });
  }
}

async function refusal(p: Promise<unknown>): Promise<BrokerRefusedError> {
  try {
    await p;
  } catch (err) {
    return err as BrokerRefusedError;
  }
  throw new Error('expected a refusal');
}

describe('broker with a control plane', () => {
  let cpUrl = '';
  let cp: Child;
  let operatorToken = '';
  let acmeToken = '';
  let broker: Running;
  let cleanup: () => Promise<void>;

  async function api(method: string, path: string, body?: unknown): Promise<unknown> {
    // Inside a tenant, that tenant's admin; everything else (tenants, nodes, placement) the operator.
    const token = path.startsWith('/v1/tenants/acme/') ? acmeToken : operatorToken;
    const res = await fetch(`${cpUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text === '' ? null : JSON.parse(text);
  }

  async function leaders(stream: string, kind = 'stream'): Promise<Map<number, string>> {
    const page = (await api('GET', '/v1/shard-assignments?limit=10000')) as {
      items: { namespace: string; kind: string; stream: string; shard: number; leader: string }[];
    };
    return new Map(
      page.items
        .filter((a) => a.kind === kind && a.stream === stream)
        .map((a) => [a.shard, a.leader]),
    );
  }

  beforeAll(async () => {
    expect(existsSync(BROKER_MAIN), 'build first: turbo run build --filter=@felix/broker...').toBe(
      true,
    );
    expect(
      existsSync(CP_MAIN),
      'build first: turbo run build --filter=@felix/control-plane...',
    ).toBe(true);
    const dir = await tempDir('felix-cluster');
    cleanup = dir.cleanup;
    const cpPort = await freePort();
    const bootPort = await freePort();
    cpUrl = `http://127.0.0.1:${cpPort}`;
    cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
    operatorToken = await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, {
      operator: true,
    });
    broker = await startClusterBroker(dir.path, {
      FELIX_CONTROLPLANE_URL: cpUrl,
      FELIX_NODE_TOKEN: await nodeToken(bootPort, 'broker-a'),
      FELIX_NODE_ID: 'broker-a',
      FELIX_NODE_ZONE: 'z1',
      FELIX_NODE_LABELS: 'rack=r1',
    });
    await waitFor(
      async () => (await readyStatus(broker)) === 200,
      'the broker to be ready',
      SETTLE_MS,
    );
    await api('POST', '/v1/tenants', { tenant_id: 'acme' });
    // The tenant made through the API gets its keys and its admin through bootstrap.
    acmeToken = await bootstrapToken(bootPort, 'acme', ['tenant.manage:tenant:acme']);
    await api('POST', '/v1/tenants/acme/namespaces', { namespace: 'prod' });
  }, 60_000);

  afterAll(async () => {
    await broker?.child.kill();
    await cp?.kill();
    await cleanup?.();
  });

  it('a_stream_created_through_the_api_is_served_by_its_broker', async () => {
    const node = (await api('GET', '/v1/nodes/broker-a')) as {
      node: {
        spec: { client_addr: string; zone: string; labels: Record<string, string> };
        status: { lifecycle: string; incarnation: number };
      };
    };
    expect(node.node.status.lifecycle).toBe('live');
    expect(node.node.status.incarnation).toBeGreaterThan(0);
    expect(node.node.spec).toMatchObject({
      client_addr: `127.0.0.1:${broker.port}`,
      zone: 'z1',
      labels: { rack: 'r1' },
    });

    await api('POST', '/v1/tenants/acme/namespaces/prod/streams', {
      stream: 'orders',
      shards: 2,
      durable: true,
    });
    expect([...(await leaders('orders')).values()]).toEqual(['broker-a', 'broker-a']);
    await waitFor(async () => (await heldShards(broker)) >= 2, 'both shards to open', SETTLE_MS);

    const felix = await client(broker, 'prod');
    const first = await felix.publish('orders', 'first');
    const second = await felix.publish('orders', 'second');
    expect(second.offset).toBe(first.offset! + 1);
    const it = felix.subscribe('orders', { from: first.offset!, shard: 0 })[Symbol.asyncIterator]();
    const got = [await it.next(), await it.next()].map((r) => TEXT.decode(r.value!.data));
    expect(got).toEqual(['first', 'second']);
    await felix.close();
  });

  it('felix_broker_streams_counts_the_streams_a_control_plane_catalog_gives_the_broker', async () => {
    // `felix_broker_streams{durable}` ("Streams in the catalog"; docs/broker-config.md lists
    // streams among what /metrics reports) is set from the YAML catalog only, so a broker whose
    // catalog comes from the control plane reads 0 whatever streams it serves.
    await api('POST', '/v1/tenants/acme/namespaces/prod/streams', {
      stream: 'counted-durable',
      shards: 1,
      durable: true,
    });
    await api('POST', '/v1/tenants/acme/namespaces/prod/streams', {
      stream: 'counted-memory',
      shards: 1,
      durable: false,
    });
    const felix = await client(broker, 'prod');
    try {
      // Served: the catalog feed has reached the broker.
      await waitFor(
        async () => (await felix.publish('counted-memory', 'x')).offset !== undefined,
        'the in-memory stream to be served',
        SETTLE_MS,
      );
      await felix.publish('counted-durable', 'x');
    } finally {
      await felix.close();
    }
    const body = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
    const count = (durable: string) =>
      Number(new RegExp(`felix_broker_streams\\{durable="${durable}"\\} (\\d+)`).exec(body)?.[1]);
    expect(count('true')).toBeGreaterThanOrEqual(1);
    expect(count('false')).toBeGreaterThanOrEqual(1);
  });

  it('a_shard_led_by_another_node_is_refused_with_not_leader', async () => {
    // A second node that only heartbeats: it takes shards but serves nothing.
    const ghost = { node_id: 'ghost', advertise_addr: '127.0.0.1:1', client_addr: '127.0.0.1:1' };
    await api('POST', '/v1/nodes', { ...ghost, incarnation: 1 });
    try {
      await api('POST', '/v1/tenants/acme/namespaces/prod/streams', { stream: 'wide', shards: 16 });
      const owners = await leaders('wide');
      const mine = [...owners].filter(([, l]) => l === 'broker-a').map(([s]) => s);
      const theirs = [...owners].filter(([, l]) => l === 'ghost').map(([s]) => s);
      expect(mine.length).toBeGreaterThan(0);
      expect(theirs.length).toBeGreaterThan(0);
      // 2 from `orders`, plus this stream's shards that broker-a leads.
      await waitFor(
        async () => (await heldShards(broker)) >= 2 + mine.length,
        'my shards to open',
        SETTLE_MS,
      );

      // Not routed: the broker's own answer is what this test reads (a routed client would try
      // the ghost's address, where nothing listens).
      const felix = await client(broker, 'prod', false);
      const keyFor = (shard: number) => {
        for (let i = 0; ; i++) {
          const k = `k${i}`;
          if (shardForKey(new TextEncoder().encode(k), 16, 'modulo') === shard) return k;
        }
      };
      const refused = await refusal(felix.publish('wide', 'x', { key: keyFor(theirs[0]!) }));
      expect(refused.brokerCode).toBe('not_leader');
      expect(refused.message).toContain('ghost');
      // Once the address book has been read, the refusal names where the leader listens.
      await waitFor(
        async () =>
          (await refusal(felix.publish('wide', 'x', { key: keyFor(theirs[0]!) }))).message.includes(
            'client address 127.0.0.1:1',
          ),
        'the refusal to name the address',
        SETTLE_MS,
      );
      // A subscribe is answered with an error carrying the code (the client would keep
      // retrying a redirect-class refusal, so this one is read off a raw stream).
      expect(await rawSubscribe(broker, 'wide', theirs[0]!)).toMatchObject({
        type: 'error',
        code: 'not_leader',
        retry: 'redirect',
      });
      // The shards it does lead serve as usual.
      const ok = await felix.publish('wide', 'y', { key: keyFor(mine[0]!) });
      expect(ok.offset).toBe(0);

      // The same for a cache: a key on the other node's shard is refused, one on ours is kept.
      await api('POST', '/v1/tenants/acme/namespaces/prod/caches', { cache: 'wide', shards: 16 });
      const cacheOwners = await leaders('wide', 'cache');
      const cacheTheirs = [...cacheOwners].find(([, l]) => l === 'ghost')![0];
      const cacheMine = [...cacheOwners].find(([, l]) => l === 'broker-a')![0];
      const cache = felix.cache('wide');
      await waitFor(
        async () => {
          await cache.put(keyFor(cacheMine), 'kept');
          return true;
        },
        'the cache to be served',
        SETTLE_MS,
      );
      expect(TEXT.decode((await cache.get(keyFor(cacheMine)))!)).toBe('kept');
      const cacheRefused = await refusal(cache.put(keyFor(cacheTheirs), 'nope'));
      expect(cacheRefused.brokerCode).toBe('not_leader');
      await felix.close();
    } finally {
      await api('POST', '/v1/nodes/ghost/deregister', {});
    }
  });

  it('a_cache_created_through_the_api_is_served_by_its_broker', async () => {
    await api('POST', '/v1/tenants/acme/namespaces/prod/caches', { cache: 'sessions', shards: 2 });
    expect([...(await leaders('sessions', 'cache')).values()]).toEqual(['broker-a', 'broker-a']);
    const felix = await client(broker, 'prod');
    const sessions = felix.cache('sessions');
    await waitFor(
      async () => {
        await sessions.put('user-1', 'token-1');
        return true;
      },
      'the cache to be served',
      SETTLE_MS,
    );
    await sessions.put('user-2', 'token-2');
    expect(TEXT.decode((await sessions.get('user-1'))!)).toBe('token-1');
    expect(TEXT.decode((await sessions.get('user-2'))!)).toBe('token-2');
    // Deleting it through the API makes it unknown here too.
    await api('DELETE', '/v1/tenants/acme/namespaces/prod/caches/sessions');
    await waitFor(
      async () =>
        (await refusal(sessions.get('user-1')).catch(() => null))?.brokerCode === 'not_found',
      'the cache to be forgotten',
      SETTLE_MS,
    );
    await felix.close();
  });

  it('deleting_a_stream_through_the_api_closes_it_on_its_broker', async () => {
    const before = await heldShards(broker);
    await api('POST', '/v1/tenants/acme/namespaces/prod/streams', { stream: 'temp' });
    await waitFor(
      async () => (await heldShards(broker)) === before + 1,
      'temp to be assigned and opened',
      SETTLE_MS,
    );
    expect((await leaders('temp')).get(0)).toBe('broker-a');
    const felix = await client(broker, 'prod');
    const it = felix.subscribe('temp', { from: 'earliest', shard: 0 })[Symbol.asyncIterator]();
    await felix.publish('temp', 'kept until deleted');
    expect(TEXT.decode((await it.next()).value!.data)).toBe('kept until deleted');

    await api('DELETE', '/v1/tenants/acme/namespaces/prod/streams/temp');
    await waitFor(
      async () => (await heldShards(broker)) === before,
      'the shard to close',
      SETTLE_MS,
    );
    // The subscription ends (done, or an error naming the loss), and the stream is gone.
    const end = await it.next().then(
      (r) => (r.done ? 'done' : 'event'),
      () => 'error',
    );
    expect(end).not.toBe('event');
    const gone = await refusal(felix.publish('temp', 'too late'));
    expect(gone.brokerCode).toBe('not_found');
    await felix.close();
  });

  it('sigterm_deregisters_the_broker_from_the_control_plane', async () => {
    const exit = await broker.child.stop();
    expect(exit.code).toBe(0);
    const node = (await api('GET', '/v1/nodes/broker-a')) as {
      node: { status: { lifecycle: string } };
    };
    expect(node.node.status.lifecycle).toBe('left');
  });
});

describe('broker readiness and standalone mode', () => {
  it('a_clustered_broker_is_ready_only_after_its_first_snapshots', async () => {
    const dir = await tempDir('felix-cluster-ready');
    const cpPort = await freePort();
    const bootPort = await freePort();
    // The node credential comes from a first run of the control plane (its keys stay in its
    // store), which then stops.
    const first = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
    const token = await nodeToken(bootPort, 'late');
    const operator = await bootstrapToken(bootPort, 'operator', OPERATOR_PERMISSIONS, {
      operator: true,
    });
    await first.stop();
    // Nothing listens on the control plane's port yet: live, but not ready.
    const b = await startClusterBroker(dir.path, {
      FELIX_CONTROLPLANE_URL: `http://127.0.0.1:${cpPort}`,
      FELIX_NODE_TOKEN: token,
      FELIX_NODE_ID: 'late',
    });
    let cp: Child | null = null;
    try {
      expect((await fetch(`http://127.0.0.1:${b.httpPort}/live`)).status).toBe(200);
      expect(await readyStatus(b)).toBe(503);
      cp = await startControlPlane(join(dir.path, 'cp'), cpPort, bootPort);
      await waitFor(
        async () => (await readyStatus(b)) === 200,
        'ready once the feeds answer',
        SETTLE_MS,
      );
      const node = (await (
        await fetch(`http://127.0.0.1:${cpPort}/v1/nodes/late`, {
          headers: { authorization: `Bearer ${operator}` },
        })
      ).json()) as {
        node: { status: { lifecycle: string } };
      };
      expect(node.node.status.lifecycle).toBe('live');
    } finally {
      await b.child.kill();
      await cp?.kill();
      await dir.cleanup();
    }
  });

  it('the_standalone_yaml_catalog_still_serves_without_a_control_plane', async () => {
    const dir = await tempDir('felix-standalone');
    const b = await startClusterBroker(
      dir.path,
      { FELIX_CONTROLPLANE_URL: '' },
      'streams:\n  - { tenant: acme, name: local, durable: true }\n',
    );
    try {
      expect(await readyStatus(b)).toBe(200);
      const felix = await client(b, 'default');
      const sent = await felix.publish('local', 'standalone');
      const it = felix.subscribe('local', { from: sent.offset!, shard: 0 })[Symbol.asyncIterator]();
      expect(TEXT.decode((await it.next()).value!.data)).toBe('standalone');
      await felix.close();
    } finally {
      await b.child.stop();
      await dir.cleanup();
    }
  });
});
