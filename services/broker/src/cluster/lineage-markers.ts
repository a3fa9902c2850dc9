/**
 * The shard lineage files (shard-lineages.ts): one small file per shard under
 * `<data_dir>/lineages/<stream|cache>/`, holding the floor generation this broker's copy of the
 * shard was kept or started under: the copy descends from the shard's restart at that
 * generation (an accepted loss), not from the data given up before it. Written and read back as
 * marker-files.ts says, at most LINEAGE_MARKER_BYTES_MAX each. Only shards an accepted loss
 * restarted have one.
 */
import { join } from 'node:path';
import type { ShardOwnerKind } from '@felix/replication';
import { type Io, type ShardId, shardDirName } from '@felix/storage';
import { LineageMarkerError } from '../errors.js';
import { LINEAGE_MARKER_BYTES_MAX } from '../limits.js';
import { type MarkerCodec, MarkerFiles, markerObject } from '../util/marker-files.js';

/** The lineage files as the bookkeeping asks for them. */
export interface LineageFiles {
  /** The floor the copy of shard `id` was kept under (0: no file, a copy from before any;
   *  -1: a file that does not decode, whose copy is kept and the file rewritten). */
  floorOf(owner: ShardOwnerKind, id: ShardId): number;
  write(owner: ShardOwnerKind, id: ShardId, floor: number): Promise<void>;
  /** Removes the shard's file (none: nothing); its files went with its name's delete. */
  remove(owner: ShardOwnerKind, id: ShardId): Promise<void>;
}

const UTF8 = new TextEncoder();

export function encodeLineageMarker(floor: number): Uint8Array {
  return UTF8.encode(JSON.stringify({ floor }));
}

/** Decodes a lineage file's bytes; anything else than encodeLineageMarker writes is a
 *  LineageMarkerError (and only that is thrown). */
export function decodeLineageMarker(bytes: Uint8Array): number {
  const refuse = (reason: string, cause?: unknown) =>
    new LineageMarkerError(reason, cause === undefined ? undefined : { cause });
  const { floor } = markerObject(bytes, LINEAGE_MARKER_BYTES_MAX, refuse);
  if (!Number.isSafeInteger(floor) || (floor as number) < 1)
    throw new LineageMarkerError('floor must be a positive integer');
  return floor as number;
}

const CODEC: MarkerCodec<number> = {
  bytesMax: LINEAGE_MARKER_BYTES_MAX,
  encode: encodeLineageMarker,
  decode: decodeLineageMarker,
};

/** The lineage files of one data directory. */
export class LineageMarkerStore implements LineageFiles {
  private readonly files: MarkerFiles<number>;

  constructor(
    private readonly dataDir: string,
    io: Io,
    warn: (fields: object, message: string) => void,
  ) {
    const dirs = (['stream', 'cache'] as const).map((owner) => this.dirOf(owner));
    this.files = new MarkerFiles(io, CODEC, dirs, (path, err) => {
      // Adopted, as an unreadable name file is: the copy is kept, never discarded on a doubt,
      // and the next floor heard is written over it (so the floors after it gate again).
      warn(
        { err, path },
        'an unreadable shard lineage file: the copy is kept and the file rewritten',
      );
      return -1;
    });
  }

  floorOf(owner: ShardOwnerKind, id: ShardId): number {
    return this.files.known(this.pathOf(owner, id)) ?? 0;
  }

  write(owner: ShardOwnerKind, id: ShardId, floor: number): Promise<void> {
    return this.files.write(this.dirOf(owner), this.pathOf(owner, id), floor);
  }

  remove(owner: ShardOwnerKind, id: ShardId): Promise<void> {
    return this.files.remove(this.dirOf(owner), this.pathOf(owner, id));
  }

  private dirOf(owner: ShardOwnerKind): string {
    return join(this.dataDir, 'lineages', owner);
  }

  private pathOf(owner: ShardOwnerKind, id: ShardId): string {
    return join(this.dirOf(owner), shardDirName(id));
  }
}
