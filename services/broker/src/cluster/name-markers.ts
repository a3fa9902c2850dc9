/**
 * The name-incarnation files (name-incarnations.ts): one small file per stream or cache name
 * under `<data_dir>/names/<stream|cache>/`, saying which creation of the name (the control
 * plane's `uid`) this broker's shard directories of it were written for, and how many shards
 * that creation had (written and read back as marker-files.ts says, at most
 * NAME_MARKER_BYTES_MAX each).
 */
import { join } from 'node:path';
import type { ShardOwnerKind } from '@felix/replication';
import { type Io, shardDirName } from '@felix/storage';
import { NameMarkerError } from '../errors.js';
import { NAME_MARKER_BYTES_MAX, NAME_UID_CHARS_MAX } from '../limits.js';
import { type MarkerCodec, MarkerFiles, markerObject } from '../util/marker-files.js';

/** What a name's file holds. */
export interface NameMarker {
  uid: string;
  shards: number;
}

/** A name, as the shard table knows it. */
export interface MarkedName {
  owner: ShardOwnerKind;
  tenant: string;
  namespace: string;
  name: string;
}

/** The marker files as the incarnation bookkeeping asks for them. */
export interface NameMarkerFiles {
  /** What the name's file holds (read when the broker started, or written since), or null
   *  when it has none (or one that does not decode: logged). Synchronous: a name is checked
   *  as the catalog feed lists it, before any of its shards can be served. */
  known(n: MarkedName): NameMarker | null;
  write(n: MarkedName, m: NameMarker): Promise<void>;
  /** Removes the name's file (none: nothing). */
  remove(n: MarkedName): Promise<void>;
}

/** Shard counts a marker may name: the catalog's own bound is far below. */
const MARKER_SHARDS_MAX = 1_000_000;
const UTF8 = new TextEncoder();

export function encodeNameMarker(m: NameMarker): Uint8Array {
  return UTF8.encode(JSON.stringify({ uid: m.uid, shards: m.shards }));
}

/** Decodes a marker file's bytes; anything else than what encodeNameMarker writes is a
 *  NameMarkerError (and only that is thrown). */
export function decodeNameMarker(bytes: Uint8Array): NameMarker {
  const refuse = (reason: string, cause?: unknown) =>
    new NameMarkerError(reason, cause === undefined ? undefined : { cause });
  const { uid, shards } = markerObject(bytes, NAME_MARKER_BYTES_MAX, refuse);
  if (typeof uid !== 'string' || uid.length === 0 || uid.length > NAME_UID_CHARS_MAX)
    throw new NameMarkerError(`uid must be 1 to ${NAME_UID_CHARS_MAX} characters`);
  if (
    !Number.isSafeInteger(shards) ||
    (shards as number) < 1 ||
    (shards as number) > MARKER_SHARDS_MAX
  )
    throw new NameMarkerError(`shards must be an integer from 1 to ${MARKER_SHARDS_MAX}`);
  return { uid, shards: shards as number };
}

const NAME_MARKER_CODEC: MarkerCodec<NameMarker> = {
  bytesMax: NAME_MARKER_BYTES_MAX,
  encode: encodeNameMarker,
  decode: decodeNameMarker,
};

/** The marker files of one data directory. */
export class NameMarkerStore implements NameMarkerFiles {
  private readonly files: MarkerFiles<NameMarker>;

  constructor(
    private readonly dataDir: string,
    io: Io,
    warn: (fields: object, message: string) => void,
  ) {
    const dirs = (['stream', 'cache'] as const).map((owner) => this.dirOf(owner));
    this.files = new MarkerFiles(io, NAME_MARKER_CODEC, dirs, (path, err) => {
      // Kept as if absent: the name's files are adopted, never discarded on a doubt.
      warn({ err, path }, 'an unreadable name incarnation file is rewritten');
      return null;
    });
  }

  known(n: MarkedName): NameMarker | null {
    return this.files.known(this.pathOf(n));
  }

  write(n: MarkedName, m: NameMarker): Promise<void> {
    return this.files.write(this.dirOf(n.owner), this.pathOf(n), { uid: m.uid, shards: m.shards });
  }

  remove(n: MarkedName): Promise<void> {
    return this.files.remove(this.dirOf(n.owner), this.pathOf(n));
  }

  private dirOf(owner: ShardOwnerKind): string {
    return join(this.dataDir, 'names', owner);
  }

  private pathOf(n: MarkedName): string {
    // The shard directory naming (sanitised parts and a hash of the exact names), shard 0.
    const id = { tenant: n.tenant, namespace: n.namespace, stream: n.name, shard: 0 };
    return join(this.dirOf(n.owner), shardDirName(id));
  }
}
