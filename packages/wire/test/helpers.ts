// Test helpers shared by the wire suites: hex conversion and a frame builder written
// independently of the encoder under test.
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function unhex(text: string): Uint8Array {
  const clean = text.replace(/[\s|]/g, '');
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** Frames a payload by hand: magic FLX1, version 1, flags, length. */
export function handFrame(flags: number, payload: Uint8Array, magic = 0x464c5831, version = 1) {
  const out = new Uint8Array(12 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, magic);
  view.setUint16(4, version);
  view.setUint16(6, flags);
  view.setUint32(8, payload.length);
  out.set(payload, 12);
  return out;
}

/** The class of the error `decode` throws, or null when it returns: comparing decoders'
 *  refusals by class. */
export function errorOf(decode: () => unknown): unknown {
  try {
    decode();
  } catch (err) {
    return (err as Error).constructor;
  }
  return null;
}
