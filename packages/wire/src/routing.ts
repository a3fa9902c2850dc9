/**
 * Key to shard, shared by client and broker so both always agree. The key hash is 64-bit
 * FNV-1a followed by a 64-bit mixing finalizer; `modulo` takes it modulo the shard count,
 * `jump_hash` feeds it to jump consistent hashing (Lamping & Veach). No key, or a stream of
 * at most one shard, is always shard 0. These answers are frozen: changing them would send
 * one key to two shards.
 */
import { FieldRangeError } from './errors.js';
import type { ShardRouting } from './json/message-types.js';

const MASK64 = 0xffff_ffff_ffff_ffffn;
const TWO_32 = 0x1_0000_0000;

const UTF8 = new TextEncoder();

/** The shard a routing key belongs to. `shards` is the stream's shard count (u32). A string key
 *  routes by its UTF-8 bytes, as a publish sends a string key. */
export function shardForKey(
  key: Uint8Array | string | undefined,
  shards: number,
  routing: ShardRouting = 'modulo',
): number {
  if (!Number.isInteger(shards) || shards < 0 || shards > 0xffff_ffff) {
    throw new FieldRangeError('shard count', `must be a u32, got ${shards}`);
  }
  if (key === undefined || shards <= 1) return 0;
  const hash = finalize(fnv1a64(typeof key === 'string' ? UTF8.encode(key) : key));
  if (routing === 'jump_hash') return jumpHash(hash, shards);
  return Number(hash % BigInt(shards));
}

/** 64-bit FNV-1a in two 32-bit halves (exact, without a BigInt per byte). */
export function fnv1a64(bytes: Uint8Array): bigint {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]!) >>> 0;
    // multiply by 0x100000001b3 = 2^40 + 0x1b3, modulo 2^64
    const low = lo * 0x1b3;
    const carry = Math.floor(low / TWO_32);
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = low >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

function finalize(hash: bigint): bigint {
  hash ^= hash >> 30n;
  hash = (hash * 0xbf58476d1ce4e5b9n) & MASK64;
  hash ^= hash >> 27n;
  hash = (hash * 0x94d049bb133111ebn) & MASK64;
  return hash ^ (hash >> 31n);
}

function jumpHash(key: bigint, buckets: number): number {
  let bucket = -1;
  let next = 0;
  while (next < buckets) {
    bucket = next;
    key = (key * 2862933555777941757n + 1n) & MASK64;
    next = Math.trunc((bucket + 1) * (2 ** 31 / (Number(key >> 33n) + 1)));
  }
  return bucket;
}
