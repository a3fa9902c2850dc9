// Goal: key-to-shard routing gives the reference's frozen answers for both mappings, so a
// client and a broker always agree. Method: the reference's published key/shard pairs,
// plus structural properties (range, stability, minimal movement for jump hash).
import { fnv1a64 } from '@felix/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { routingHash64, shardForKey } from '../src/index.js';
import { utf8 } from './helpers.js';

describe('routing', () => {
  it('modulo_routing_gives_the_reference_answers', () => {
    const cases: Array<[number, string, number]> = [
      [8, 'customer-0', 0],
      [8, 'customer-4', 2],
      [8, 'customer-1', 3],
      [8, 'customer-6', 4],
      [8, 'customer-2', 6],
      [12, 'k0', 6],
      [12, 'k1', 10],
      [4, '', 3],
    ];
    for (const [shards, key, shard] of cases) expect(shardForKey(utf8(key), shards)).toBe(shard);
  });

  it('jump_hash_routing_gives_the_reference_answers', () => {
    const keys = ['customer-0', 'customer-1', 'customer-2', 'customer-4', 'customer-6'];
    expect(keys.map((k) => shardForKey(utf8(k), 8, 'jump_hash'))).toEqual([3, 0, 5, 2, 7]);
    expect(shardForKey(utf8('k0'), 12, 'jump_hash')).toBe(3);
    expect(shardForKey(utf8('k1'), 12, 'jump_hash')).toBe(4);
  });

  it('a_string_key_routes_to_the_shard_of_its_utf8_bytes', () => {
    // A publish takes a string key and routes its UTF-8 bytes; shardForKey given the same string
    // once answered as if every character were a zero byte (a wrong shard, silently).
    for (const key of ['customer-0', 'customer-4', 'k1', 'é-ünïcode', '']) {
      expect(shardForKey(key, 8)).toBe(shardForKey(utf8(key), 8));
      expect(shardForKey(key, 12, 'jump_hash')).toBe(shardForKey(utf8(key), 12, 'jump_hash'));
    }
    expect(shardForKey('customer-4', 8)).toBe(2);
  });

  it('no_key_or_one_shard_is_always_shard_zero', () => {
    expect(shardForKey(undefined, 16)).toBe(0);
    expect(shardForKey(undefined, 16, 'jump_hash')).toBe(0);
    expect(shardForKey(utf8('anything'), 1)).toBe(0);
    expect(shardForKey(utf8('anything'), 0, 'jump_hash')).toBe(0);
  });

  it('the_split_word_fnv_hash_equals_the_bigint_reference', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (key) => {
        expect(routingHash64(key)).toBe(fnv1a64(key));
      }),
    );
  });

  it('every_key_maps_inside_the_shard_range', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 32 }), fc.integer({ min: 1, max: 1024 }), (key, n) => {
        expect(shardForKey(key, n)).toBeLessThan(n);
        expect(shardForKey(key, n, 'jump_hash')).toBeLessThan(n);
      }),
    );
  });

  it('growing_a_jump_hash_stream_moves_keys_only_to_the_new_shard', () => {
    for (let i = 0; i < 2000; i++) {
      const key = utf8(`key-${i}`);
      const before = shardForKey(key, 8, 'jump_hash');
      const after = shardForKey(key, 9, 'jump_hash');
      expect(after === before || after === 8).toBe(true);
    }
  });
});
