/**
 * The rendezvous score. Written out by hand (FNV-1a 32 and the murmur3 finaliser) so every
 * control-plane instance and every language agrees on it bit for bit. The shard key and the
 * node id are hashed separately and then mixed: hashing their concatenation clusters badly.
 */

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** 32-bit FNV-1a over the UTF-8 bytes of `text`. */
export function fnv1a32(text: string): number {
  let h = FNV32_OFFSET;
  for (const b of utf8.encode(text)) h = Math.imul(h ^ b, FNV32_PRIME);
  return h >>> 0;
}

/** The murmur3 32-bit finaliser: spreads every input bit over the whole word. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mixes a shard-key hash with a node-id hash into the node's score for that shard. */
export function mixScore(keyHash: number, nodeHash: number): number {
  return fmix32((fmix32(keyHash) ^ fmix32((nodeHash ^ 0x5bd1e995) >>> 0)) >>> 0);
}
