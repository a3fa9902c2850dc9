/**
 * Where a shard's files live (reference §3.1): the shard directory name, segment and index
 * file names (20-digit zero-padded segment ids, parsed numerically), and creating directories
 * so that every new path component is durable in its parent.
 */
import { dirname, join } from 'node:path';
import { fnv1a64 } from '@felix/common';
import type { Io } from '../io/io.js';

export interface ShardId {
  tenant: string;
  namespace: string;
  stream: string;
  shard: number;
}

const NAME_PART_CHARS_MAX = 32;
const encoder = new TextEncoder();

function sanitize(part: string): string {
  const cleaned = part.replace(/[^A-Za-z0-9-]/g, '_').slice(0, NAME_PART_CHARS_MAX);
  return cleaned.length === 0 ? '_' : cleaned;
}

/** `{t}_{n}_{s}_{shard}-{fnv1a64:016x}`, the hash over length-prefixed names and the shard. */
export function shardDirName(shard: ShardId): string {
  const parts = [shard.tenant, shard.namespace, shard.stream].map((s) => encoder.encode(s));
  let size = 4;
  for (const p of parts) size += 8 + p.length;
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (const p of parts) {
    view.setBigUint64(at, BigInt(p.length));
    bytes.set(p, at + 8);
    at += 8 + p.length;
  }
  view.setUint32(at, shard.shard >>> 0);
  const hash = fnv1a64(bytes).toString(16).padStart(16, '0');
  const t = sanitize(shard.tenant);
  const n = sanitize(shard.namespace);
  const s = sanitize(shard.stream);
  return `${t}_${n}_${s}_${shard.shard}-${hash}`;
}

const SEGMENT_ID_DIGITS = 20;
const SEGMENT_FILE = /^(\d{20})\.log$/;

export function segmentFileName(id: number): string {
  return `${String(id).padStart(SEGMENT_ID_DIGITS, '0')}.log`;
}

export function indexFileName(id: number): string {
  return `${String(id).padStart(SEGMENT_ID_DIGITS, '0')}.index`;
}

export const DURABLE_MARK_FILE = 'durable.mark';
/** The shard's replica state (replica/replica-state.ts); written aside as `replica.tmp`. */
export const REPLICA_FILE = 'replica';
/** Where each generation's records start in the shard's log (replica/generation-starts.ts). */
export const GENERATIONS_FILE = 'generations';

/** The exclusive-writer lock of a directory (a shard's, or a broker's data directory). */
export const DIR_LOCK_FILE = 'felix.lock';

/** Segment ids named in a directory listing, numerically sorted; unsafe ids reported apart. */
export function listSegmentIds(names: string[]): { ids: number[]; unsafe: string[] } {
  const ids: number[] = [];
  const unsafe: string[] = [];
  for (const name of names) {
    const m = SEGMENT_FILE.exec(name);
    if (m === null) continue;
    const id = Number(m[1]);
    if (!Number.isSafeInteger(id)) unsafe.push(name);
    else ids.push(id);
  }
  ids.sort((a, b) => a - b);
  return { ids, unsafe };
}

/**
 * Creates `path` and any missing parents, syncing each new component into its parent. An
 * existing directory gets its parent re-synced, in case an earlier creation never was.
 */
export async function ensureDurableDir(io: Io, path: string): Promise<void> {
  const missing: string[] = [];
  let p = path;
  while (!(await io.exists(p))) {
    missing.push(p);
    const parent = dirname(p);
    if (parent === p) break;
    p = parent;
  }
  if (missing.length === 0) {
    await io.syncDir(dirname(path));
    return;
  }
  for (const dir of missing.reverse()) {
    await io.mkdir(dir);
    await io.syncDir(dirname(dir));
  }
}

export function segmentPath(dir: string, id: number): string {
  return join(dir, segmentFileName(id));
}

export function indexPath(dir: string, id: number): string {
  return join(dir, indexFileName(id));
}
