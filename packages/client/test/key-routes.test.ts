// Goal: the pure parts of routing a cache's single-key calls by key (projections/key-routes.ts):
// a key maps to the shard the broker stores it in; a walk never goes back to a broker that
// already refused the call; a write is resent only when its refusal says nothing was applied;
// a handle keeps the owner's connection it found until the owner map changes, and a call refused
// `not_leader` on it goes on at the owner named, never back.
// Method: golden shard numbers (from @felix/wire's shardForKey, the broker's function), scripted
// walks, and KeyRoutes over a scripted route whose connections are plain objects.
import { shardForKey } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { cacheShardOf, followRedirects } from '../src/cluster/routing.js';
import {
  ConnectionLostError,
  ForbiddenError,
  NotLeaderError,
  OutcomeUnknownError,
  RedirectLimitError,
  ShardUnavailableError,
  notLeaderOf,
} from '../src/errors.js';
import { KEYED_ROUTE_ATTEMPTS_MAX } from '../src/limits.js';
import { type KeyRoute, KeyRoutes, mayResendKeyed } from '../src/projections/key-routes.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

const UTF8 = new TextEncoder();

/** A connection as KeyRoutes sees one: its server, and whether it is lost. */
const conn = (server: string) => ({ server, isLost: false }) as unknown as BrokerConnection;

/** A route over three brokers a, b, c: `owner` serves the shard; others refuse `not_leader`
 *  naming it, or as `refuse` says. */
function scripted(opts: { width: number; owner: string }) {
  const conns = new Map(['a', 'b', 'c'].map((s) => [s, conn(s)]));
  const log: string[] = [];
  let version = 0;
  let owner = opts.owner;
  const route: KeyRoute & { move(to: string): void } = {
    active: true,
    requestTimeoutMs: 30_000,
    get ownersVersion() {
      return version;
    },
    widthNow: () => opts.width,
    widthOf: async () => opts.width,
    liveFor: () => conns.get(owner),
    request: (_name, _shard, call, _signal, tried) =>
      followRedirects({
        tried,
        first: owner,
        attempt: (addr) => call(conns.get(addr)!),
        next: (err) => (err instanceof NotLeaderError ? owner : undefined),
      }),
    refused: (_name, _shard, err) => {
      if (err instanceof NotLeaderError) log.push(`refused ${err.message}`);
    },
    move(to) {
      owner = to;
      version++;
    },
  };
  return { route, conns, log };
}

describe('routing a cache call by key', () => {
  it('a_cache_key_maps_to_the_shard_the_broker_stores_it_in', () => {
    // The broker's CacheService.shardOf: the key's UTF-8 bytes, modulo; one shard, no hash.
    const golden: Array<[string, number, number]> = [
      ['user-7', 3, 2],
      ['user-7', 6, 2],
      ['user-7', 16, 14],
      ['ключ', 6, 2],
      ['ключ', 16, 4],
      ['alice', 16, 12],
    ];
    for (const [key, width, shard] of golden) expect(cacheShardOf(key, width)).toBe(shard);
    for (let i = 0; i < 200; i++) {
      const key = `k-${i}`;
      expect(cacheShardOf(key, 7)).toBe(shardForKey(UTF8.encode(key), 7, 'modulo'));
      expect(cacheShardOf(key, 1)).toBe(0);
    }
  });

  it('a_walk_never_goes_back_to_a_broker_that_refused_the_call_before_it', async () => {
    const attempts: string[] = [];
    const walk = (first: string) =>
      followRedirects({
        tried: ['a'],
        first,
        attempt: async (addr) => {
          attempts.push(addr);
          if (addr === 'c') return 'served by c';
          throw notLeaderOf({ node_id: 'a', addr: 'a', generation: 1 });
        },
        next: () => 'a',
      });
    // Its first broker already refused: nothing is sent.
    await expect(walk('a')).rejects.toBeInstanceOf(RedirectLimitError);
    expect(attempts).toEqual([]);
    // b names a, which refused before: the walk ends there.
    await expect(walk('b')).rejects.toBeInstanceOf(RedirectLimitError);
    expect(attempts).toEqual(['b']);
    expect(await walk('c')).toBe('served by c');
  });

  it('a_keyed_write_is_resent_only_when_its_refusal_says_nothing_was_applied', () => {
    const notLeader = notLeaderOf({ node_id: 'b', generation: 2 });
    const unavailable = new ShardUnavailableError({
      brokerCode: 'shard_unavailable',
      message: 'x',
    });
    expect(mayResendKeyed(notLeader, 0, 0, 30_000)).toBe(true);
    expect(mayResendKeyed(unavailable, 0, 0, 30_000)).toBe(true);
    expect(mayResendKeyed(new ConnectionLostError('quic://a:1'), 0, 0, 30_000)).toBe(true);
    // A lost write is reported so (the cache maps it) and never resent.
    const lost = new OutcomeUnknownError('cache c', { cause: new ConnectionLostError('a') });
    expect(mayResendKeyed(lost, 0, 0, 30_000)).toBe(false);
    expect(
      mayResendKeyed(new ForbiddenError({ brokerCode: 'forbidden', message: 'no' }), 0, 0, 30_000),
    ).toBe(false);
    // Bounded by the request timeout and by the attempts.
    expect(mayResendKeyed(notLeader, 0, 30_000, 30_000)).toBe(false);
    expect(mayResendKeyed(notLeader, KEYED_ROUTE_ATTEMPTS_MAX, 0, 30_000)).toBe(false);
  });

  it('a_cache_handle_keeps_the_owners_connection_until_the_owner_map_changes', () => {
    const { route, conns } = scripted({ width: 6, owner: 'b' });
    const keys = new KeyRoutes(route, 'users', () => false);
    expect(keys.now('user-7')).toBe(conns.get('b'));
    // Looked up once: the route's answer changing without a new version is not seen.
    route.liveFor = () => conns.get('c');
    expect(keys.now('user-7')).toBe(conns.get('b'));
    route.move('c');
    expect(keys.now('user-7')).toBe(conns.get('c'));
  });

  it('a_keyed_call_refused_not_leader_goes_on_at_the_named_owner_never_back', async () => {
    const { route, log } = scripted({ width: 6, owner: 'c' });
    const keys = new KeyRoutes(route, 'users', () => false);
    const served: string[] = [];
    const call = async (bc: BrokerConnection) => {
      served.push(bc.server);
      if (bc.server !== 'c') throw notLeaderOf({ node_id: 'c', addr: 'c', generation: 2 });
      return `value from ${bc.server}`;
    };
    // The caller's own attempt on b was refused: the walk starts at c, b is not asked again.
    const refusal = notLeaderOf({ node_id: 'c', addr: 'c', generation: 2 });
    expect(await keys.run('user-7', call, undefined, { err: refusal, from: 'b' })).toBe(
      'value from c',
    );
    expect(served).toEqual(['c']);
    expect(log).toHaveLength(1);
    // A write lost on the way is never sent again.
    served.length = 0;
    const lost = new OutcomeUnknownError('cache users', { cause: new ConnectionLostError('c') });
    const write = async (bc: BrokerConnection) => {
      served.push(bc.server);
      throw lost;
    };
    await expect(keys.run('user-7', write, undefined)).rejects.toBe(lost);
    expect(served).toEqual(['c']);
  });
});
