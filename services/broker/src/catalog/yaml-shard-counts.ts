/**
 * A standalone broker's record of the shard count each YAML stream and cache was first served
 * with: one small file per name under `<data_dir>/yaml-shards/<stream|cache>/` (written and read
 * back as util/marker-files.ts says). A key goes to `shardForKey(key, shards)`, so with another
 * count in the YAML a cache's keys route to shards that never held them and read as absent, and
 * a stream's keyed records part from their earlier ones. The control plane fixes a count at
 * creation; a standalone broker whose YAML changed one refuses to start, naming it. A cluster
 * broker keeps its own per-name files (cluster/name-markers.ts) and never reads these.
 */
import { join } from 'node:path';
import { type Io, shardDirName } from '@felix/storage';
import { MarkerFiles, markerObject } from '../util/marker-files.js';
import type { BrokerConfig } from '../config/types.js';
import { ShardCountChangedError, ShardCountMarkerError } from '../errors.js';
import { NAME_MARKER_BYTES_MAX } from '../limits.js';

/** Shard counts a file may name: the catalog's own bound is far below. */
const SHARDS_MAX = 1_000_000;
const UTF8 = new TextEncoder();

export function encodeShardCount(shards: number): Uint8Array {
  return UTF8.encode(JSON.stringify({ shards }));
}

/** Decodes a file's bytes; anything else than encodeShardCount writes is a ShardCountMarkerError
 *  (and only that is thrown). */
export function decodeShardCount(bytes: Uint8Array): number {
  const refuse = (reason: string, cause?: unknown) =>
    new ShardCountMarkerError(reason, cause === undefined ? undefined : { cause });
  const { shards } = markerObject(bytes, NAME_MARKER_BYTES_MAX, refuse);
  if (!Number.isSafeInteger(shards) || (shards as number) < 1 || (shards as number) > SHARDS_MAX)
    throw new ShardCountMarkerError(`shards must be an integer from 1 to ${SHARDS_MAX}`);
  return shards as number;
}

type Owner = 'stream' | 'cache';
interface Named {
  owner: Owner;
  tenant: string;
  namespace: string;
  name: string;
  shards: number;
}

/** The names whose shard logs a standalone broker keeps on disk: durable streams, and caches
 *  (log-backed whenever there is a data directory). */
function namesOnDisk(cfg: BrokerConfig): Named[] {
  const streams = cfg.streams
    .filter((s) => s.durable)
    .map((s): Named => ({ owner: 'stream', ...s }));
  const caches = cfg.caches.map((c): Named => ({ owner: 'cache', ...c }));
  return [...streams, ...caches];
}

/**
 * Refuses a YAML whose stream or cache names another shard count than the one its files were
 * written with (ShardCountChangedError, before any log opens); records the count of a name it
 * has none for. An unreadable file is warned about and written again, never a reason to refuse.
 */
export async function checkYamlShardCounts(
  cfg: BrokerConfig,
  dataDir: string,
  io: Io,
  warn: (fields: object, message: string) => void,
): Promise<void> {
  const dirOf = (owner: Owner) => join(dataDir, 'yaml-shards', owner);
  const files = new MarkerFiles<number>(
    io,
    { bytesMax: NAME_MARKER_BYTES_MAX, encode: encodeShardCount, decode: decodeShardCount },
    [dirOf('stream'), dirOf('cache')],
    (path, err) => {
      warn({ err, path }, 'an unreadable shard count file is written again');
      return null;
    },
  );
  const names = namesOnDisk(cfg);
  const pathOf = (n: Named) =>
    join(
      dirOf(n.owner),
      shardDirName({ tenant: n.tenant, namespace: n.namespace, stream: n.name, shard: 0 }),
    );
  for (const n of names) {
    const was = files.known(pathOf(n));
    if (was !== null && was !== n.shards)
      throw new ShardCountChangedError(
        `${n.owner} ${n.tenant}/${n.namespace}/${n.name}`,
        was,
        n.shards,
      );
  }
  for (const n of names)
    if (files.known(pathOf(n)) === null) await files.write(dirOf(n.owner), pathOf(n), n.shards);
}
