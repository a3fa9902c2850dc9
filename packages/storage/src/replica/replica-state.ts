/**
 * The `replica` state file (`FLRS`, 28 bytes): the highest generation this replica accepted
 * and its commit offset (one past the last record a majority holds), plus a flag saying
 * retention is held at the commit offset. Pure codec, no I/O. Unlike `durable.mark` this file
 * is authoritative: bytes that do not decode are an error, never "absent".
 *
 *   u32 magic, u16 version, u16 flags (bit 0: retention held), u64 generation, u64 commit,
 *   u32 CRC-32 over bytes 0..24; all big-endian.
 */
import { crc32Range } from '../segment/checksum.js';
import { readU64, viewOf, writeU64 } from '../segment/format.js';

export const REPLICA_STATE_MAGIC = 0x464c5253; // "FLRS"
export const REPLICA_STATE_BYTES = 28;
const REPLICA_STATE_VERSION = 1;
const FLAG_RETENTION_HELD = 1;

export interface ReplicaState {
  /** The highest generation accepted; a replica refuses any leader of a lower one. */
  generation: number;
  /** One past the last majority-held record: nothing below it is ever truncated. */
  commitOffset: number;
  /** Retention and compaction keep everything at or above the commit offset. */
  retentionHeld: boolean;
}

/** What a replica that never accepted a generation holds (the file is absent). */
export const REPLICA_STATE_INITIAL: Readonly<ReplicaState> = Object.freeze({
  generation: 0,
  commitOffset: 0,
  retentionHeld: false,
});

export function encodeReplicaState(state: ReplicaState): Uint8Array {
  const out = new Uint8Array(REPLICA_STATE_BYTES);
  const v = viewOf(out);
  v.setUint32(0, REPLICA_STATE_MAGIC);
  v.setUint16(4, REPLICA_STATE_VERSION);
  v.setUint16(6, state.retentionHeld ? FLAG_RETENTION_HELD : 0);
  writeU64(v, 8, state.generation);
  writeU64(v, 16, state.commitOffset);
  v.setUint32(24, crc32Range(out, 0, 0, 24));
  return out;
}

/** The state, or a reason the bytes are not one (the caller raises its typed error). */
export function decodeReplicaState(bytes: Uint8Array): ReplicaState | string {
  if (bytes.length !== REPLICA_STATE_BYTES)
    return `${bytes.length} bytes, expected ${REPLICA_STATE_BYTES}`;
  const v = viewOf(bytes);
  if (v.getUint32(0) !== REPLICA_STATE_MAGIC) return 'bad magic';
  const version = v.getUint16(4);
  if (version !== REPLICA_STATE_VERSION) return `unknown version ${version}`;
  if (v.getUint32(24) !== crc32Range(bytes, 0, 0, 24)) return 'checksum mismatch';
  const flags = v.getUint16(6);
  if ((flags & ~FLAG_RETENTION_HELD) !== 0) return `unknown flags ${flags}`;
  const generation = readU64(v, 8);
  const commitOffset = readU64(v, 16);
  if (generation < 0 || commitOffset < 0) return 'a field exceeds the safe integer range';
  return { generation, commitOffset, retentionHeld: (flags & FLAG_RETENTION_HELD) !== 0 };
}
