/**
 * durable.mark (`FLSM`, 32 bytes): how far the active segment is known to be synced. Written
 * in place after each flush it describes; synced itself only at open, close and after a
 * repair. Recovery may cut anything past it. Missing or damaged reads as absent (strict).
 */
import { crc32Range } from '../segment/checksum.js';
import { readU64, viewOf, writeU64 } from '../segment/format.js';

export const DURABLE_MARK_MAGIC = 0x464c534d; // "FLSM"
export const DURABLE_MARK_BYTES = 32;
const DURABLE_MARK_VERSION = 1;

export interface DurableMark {
  segmentId: number;
  syncedBytes: number;
}

export function encodeDurableMark(mark: DurableMark): Uint8Array {
  const out = new Uint8Array(DURABLE_MARK_BYTES);
  const v = viewOf(out);
  v.setUint32(0, DURABLE_MARK_MAGIC);
  v.setUint16(4, DURABLE_MARK_VERSION);
  v.setUint16(6, 0);
  writeU64(v, 8, mark.segmentId);
  writeU64(v, 16, mark.syncedBytes);
  v.setUint32(24, crc32Range(out, 0, 0, 24));
  v.setUint32(28, 0);
  return out;
}

export function decodeDurableMark(bytes: Uint8Array): DurableMark | undefined {
  if (bytes.length < DURABLE_MARK_BYTES) return undefined;
  const v = viewOf(bytes);
  if (v.getUint32(0) !== DURABLE_MARK_MAGIC || v.getUint16(4) !== DURABLE_MARK_VERSION)
    return undefined;
  if (v.getUint32(24) !== crc32Range(bytes, 0, 0, 24)) return undefined;
  const segmentId = readU64(v, 8);
  const syncedBytes = readU64(v, 16);
  if (segmentId < 0 || syncedBytes < 0) return undefined;
  return { segmentId, syncedBytes };
}
