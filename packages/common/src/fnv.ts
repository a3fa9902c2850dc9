const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** 64-bit FNV-1a over bytes, exact (BigInt), as the storage directory names require. */
export function fnv1a64(bytes: Uint8Array): bigint {
  let h = FNV64_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV64_PRIME) & MASK64;
  return h;
}
