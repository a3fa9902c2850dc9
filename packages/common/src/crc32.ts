/**
 * CRC-32 (IEEE 802.3, the zlib polynomial, reflected 0xEDB88320) in pure TypeScript so it
 * runs anywhere (the wire codec may not import `node:`). Slicing-by-8 tables keep it fast.
 */

const TABLES: Uint32Array[] = (() => {
  const tables: Uint32Array[] = [];
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t0[n] = c >>> 0;
  }
  tables.push(t0);
  for (let t = 1; t < 8; t++) {
    const prev = tables[t - 1]!;
    const next = new Uint32Array(256);
    for (let n = 0; n < 256; n++) next[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    tables.push(next);
  }
  return tables;
})();

/** Continues a CRC-32 over `bytes[start, end)`; pass the previous result as `crc` (0 to start). */
export function crc32(bytes: Uint8Array, crc = 0, start = 0, end = bytes.length): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
  ];
  let c = ~crc >>> 0;
  let i = start;
  while (end - i >= 8) {
    const a =
      (c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>>
      0;
    c =
      t7[a & 0xff]! ^
      t6[(a >>> 8) & 0xff]! ^
      t5[(a >>> 16) & 0xff]! ^
      t4[a >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < end) c = t0[(c ^ bytes[i++]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
