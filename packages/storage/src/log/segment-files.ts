/**
 * The segment files of one log, oldest first (the last is the active segment): creating the
 * next segment, reopening the active one after recovery, the active segment's index file, and
 * the bounded set of open sealed-segment files that reads share (least recently used closed
 * first, never one a read holds). Dropping a head segment keeps its file open until its last
 * reader is done; one whose file could not be deleted is put back.
 */
import { WriteFailedError } from '../errors.js';
import { OPEN_SEALED_SEGMENTS_MAX } from '../limits.js';
import { type Io, type IoFile, writeFully } from '../io/io.js';
import {
  SEGMENT_HEADER_BYTES,
  SEGMENT_VERSION_WRITTEN,
  encodeSegmentHeader,
} from '../segment/format.js';
import { INDEX_HEADER_BYTES, SparseIndex } from '../segment/sparse-index.js';
import { indexPath, segmentPath } from './layout.js';
import { nowMicros } from './log-options.js';
import type { RecoveryPlan } from './recovery.js';

export interface Segment {
  id: number;
  baseOffset: number;
  nextOffset: number;
  /** Written (readable) bytes. */
  bytes: number;
  version: number;
  newestTimestampMicros: number;
  index: SparseIndex;
  file: IoFile | undefined;
  opening: Promise<IoFile> | undefined;
  readers: number;
  deleted: boolean;
}

interface ActiveFiles {
  indexFile: IoFile;
  /** Index entries already written to the index file. */
  indexEntriesWritten: number;
}

export class SegmentFiles {
  private readonly openSealed = new Map<Segment, true>();

  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly indexSpacingBytes: number,
    /** Oldest first; never empty. */
    readonly list: Segment[],
    private activeFiles: ActiveFiles,
  ) {}

  /** The segments recovery left, with the active one open for writing (or a first one made). */
  static async open(
    io: Io,
    dir: string,
    plan: RecoveryPlan,
    indexSpacingBytes: number,
  ): Promise<SegmentFiles> {
    const list: Segment[] = plan.segments.map((s) => ({
      id: s.id,
      baseOffset: s.baseOffset,
      nextOffset: s.nextOffset,
      bytes: s.bytes,
      version: s.version,
      newestTimestampMicros: s.newestTimestampMicros,
      index: s.index,
      file: undefined,
      opening: undefined,
      readers: 0,
      deleted: false,
    }));
    if (list.length === 0) {
      const created = await createSegment(io, dir, 0, 0, indexSpacingBytes);
      list.push(created.segment);
      return new SegmentFiles(io, dir, indexSpacingBytes, list, created.files);
    }
    const active = list[list.length - 1]!;
    const file = await io.open(segmentPath(dir, active.id), 'write');
    active.file = file;
    const indexFile = await closingOnFailure([file], async () => {
      // What an earlier process left in the page cache is made durable before the mark says so.
      await file.datasync();
      return io.open(indexPath(dir, active.id), 'write');
    });
    const files = { indexFile, indexEntriesWritten: active.index.length };
    return new SegmentFiles(io, dir, indexSpacingBytes, list, files);
  }

  get active(): Segment {
    return this.list[this.list.length - 1]!;
  }

  /** Oldest retained offset. */
  get baseOffset(): number {
    return this.list[0]!.baseOffset;
  }

  /** Index entries of the active segment not yet in its index file. */
  get indexEntriesPending(): number {
    return this.active.index.length - this.activeFiles.indexEntriesWritten;
  }

  /** Index in `list` of the segment holding `offset` (the last whose base is at or below it). */
  indexFor(offset: number): number {
    let lo = 0;
    let hi = this.list.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.list[mid]!.baseOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Appends not-yet-written index entries to the index file (not synced; indexes are derived). */
  async writeIndexEntries(seg: Segment): Promise<void> {
    const files = this.activeFiles;
    const from = files.indexEntriesWritten;
    const to = seg.index.length;
    if (to === from) return;
    const bytes = seg.index.encodeRange(from, to);
    try {
      await writeFully(files.indexFile, bytes, 0, bytes.length, INDEX_HEADER_BYTES + from * 16);
      files.indexEntriesWritten = to;
    } catch {
      // A failed index write loses nothing: the index is rebuilt from the segment when needed.
    }
  }

  /**
   * Finishes the active segment's index file (written, synced, closed). The caller has synced
   * the segment's data first: an index must never point past data on disk.
   */
  async sealActiveIndex(): Promise<void> {
    await this.writeIndexEntries(this.active);
    // Indexes are derived: a failed sync loses nothing recovery cannot rebuild.
    await this.activeFiles.indexFile.datasync().catch(() => undefined);
    await this.activeFiles.indexFile.close();
  }

  /**
   * Raises the version of the active segment while it holds no record (a record kind its version
   * may not hold is next): a file with the new header is made and synced beside it and renamed
   * over it, so a crash leaves either header, never a torn one. Its preallocated zeros go.
   */
  async raiseEmptyActive(version: number): Promise<void> {
    const seg = this.active;
    const path = segmentPath(this.dir, seg.id);
    const tmp = `${path}.tmp`;
    const header = encodeSegmentHeader({
      baseOffset: seg.baseOffset,
      createdAtMicros: nowMicros(),
      version,
    });
    try {
      const fresh = await this.io.open(tmp, 'replace');
      await closingOnFailure([fresh], async () => {
        await writeFully(fresh, header, 0, header.length, 0);
        await fresh.datasync();
      });
      await fresh.close();
    } catch (err) {
      // Nothing changed yet (a disk full for a moment): the append fails alone and the next
      // one tries again. A temp file left behind is ignored by recovery and replaced then.
      await this.io.unlink(tmp).catch(() => undefined);
      throw new WriteFailedError(this.dir, { cause: err });
    }
    await this.io.rename(tmp, path);
    await this.io.syncDir(this.dir);
    const old = seg.file;
    seg.file = await this.io.open(path, 'write');
    seg.bytes = SEGMENT_HEADER_BYTES;
    seg.version = version;
    // The old handle names the replaced file: nothing reads it any more.
    void old?.close().catch(() => undefined);
  }

  /** Creates the segment after the active one (synced, in the synced directory) and makes it
   *  active; `version` is its header's (a record kind a v3 segment may not hold needs more). */
  async startNext(version = SEGMENT_VERSION_WRITTEN): Promise<Segment> {
    const old = this.active;
    const id = old.id + 1;
    let created: Awaited<ReturnType<typeof createSegment>>;
    try {
      created = await createSegment(
        this.io,
        this.dir,
        id,
        old.nextOffset,
        this.indexSpacingBytes,
        version,
      );
    } catch (err) {
      throw await this.undoCreation(id, err);
    }
    this.list.push(created.segment);
    this.activeFiles = created.files;
    this.openSealed.set(old, true);
    this.evictSealed();
    return created.segment;
  }

  /**
   * After a failed creation of segment `id` (a disk full for a moment): removes what it left, so
   * the next roll creates it afresh. A WriteFailedError (retry) once both files are gone (and the
   * directory synced); the creation's own failure when they could not be removed.
   */
  private async undoCreation(id: number, err: unknown): Promise<unknown> {
    try {
      for (const path of [segmentPath(this.dir, id), indexPath(this.dir, id)]) {
        if (await this.io.exists(path)) await this.io.unlink(path);
      }
      await this.io.syncDir(this.dir);
      return new WriteFailedError(this.dir, { cause: err });
    } catch {
      // Left behind: the writer refuses appends, and the next open's recovery deals with it.
      return err;
    }
  }

  /** The open file of `seg` for a read; pair with `release`. */
  async acquire(seg: Segment): Promise<IoFile> {
    seg.readers++;
    try {
      if (seg.file !== undefined) {
        if (this.openSealed.has(seg)) {
          this.openSealed.delete(seg);
          this.openSealed.set(seg, true);
        }
        return seg.file;
      }
      seg.opening ??= this.io.open(segmentPath(this.dir, seg.id), 'read');
      const file = await seg.opening;
      seg.opening = undefined;
      seg.file = file;
      this.openSealed.set(seg, true);
      this.evictSealed();
      return file;
    } catch (err) {
      seg.opening = undefined;
      seg.readers--;
      throw err;
    }
  }

  release(seg: Segment): void {
    seg.readers--;
    if (seg.deleted && seg.readers === 0) this.closeSegmentFile(seg);
  }

  /** Takes the oldest segment out of the log, so no new read starts in it. */
  dropHead(): Segment {
    const seg = this.list[0]!;
    this.list.shift();
    seg.deleted = true;
    return seg;
  }

  /** Puts back the head `dropHead` took whose file could not be deleted: it reads again. */
  restoreHead(seg: Segment): void {
    seg.deleted = false;
    this.list.unshift(seg);
  }

  /** Closes a dropped segment's file unless a read still holds it (its release closes it). */
  closeIfUnread(seg: Segment): void {
    if (seg.readers === 0) this.closeSegmentFile(seg);
  }

  /** Closes the index file and every segment file. */
  async closeAll(): Promise<void> {
    const files: Array<IoFile | undefined> = [this.activeFiles.indexFile];
    for (const seg of this.list) {
      files.push(seg.file);
      seg.file = undefined;
    }
    this.openSealed.clear();
    // Closing: nothing is left to write through these handles, and a failed close loses nothing.
    await Promise.all(files.map((f) => f?.close().catch(() => undefined)));
  }

  private evictSealed(): void {
    if (this.openSealed.size <= OPEN_SEALED_SEGMENTS_MAX) return;
    for (const seg of this.openSealed.keys()) {
      if (this.openSealed.size <= OPEN_SEALED_SEGMENTS_MAX) break;
      if (seg.readers > 0) continue;
      this.closeSegmentFile(seg);
    }
  }

  private closeSegmentFile(seg: Segment): void {
    this.openSealed.delete(seg);
    const f = seg.file;
    seg.file = undefined;
    // A sealed segment's file is only read: a failed close loses nothing.
    void f?.close().catch(() => undefined);
  }
}

async function createSegment(
  io: Io,
  dir: string,
  id: number,
  baseOffset: number,
  spacing: number,
  version = SEGMENT_VERSION_WRITTEN,
): Promise<{ segment: Segment; files: ActiveFiles }> {
  const file = await io.open(segmentPath(dir, id), 'create');
  const header = encodeSegmentHeader({ baseOffset, createdAtMicros: nowMicros(), version });
  const index = new SparseIndex(baseOffset, spacing);
  const indexFile = await closingOnFailure([file], async () => {
    await writeFully(file, header, 0, header.length, 0);
    await file.datasync();
    return io.open(indexPath(dir, id), 'replace');
  });
  await closingOnFailure([file, indexFile], async () => {
    const indexHeader = index.encode();
    await writeFully(indexFile, indexHeader, 0, indexHeader.length, 0);
    await io.syncDir(dir);
  });
  return {
    segment: {
      id,
      baseOffset,
      nextOffset: baseOffset,
      bytes: SEGMENT_HEADER_BYTES,
      version,
      newestTimestampMicros: -1,
      index,
      file,
      opening: undefined,
      readers: 0,
      deleted: false,
    },
    files: { indexFile, indexEntriesWritten: 0 },
  };
}

/**
 * Runs `work` over freshly opened `files`; when it fails (a write or fdatasync refused by the
 * disk), closes them before the failure goes on, so an open or roll retried after a storage
 * fault leaves no handle behind for the garbage collector.
 */
export async function closingOnFailure<T>(
  files: readonly IoFile[],
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    // The work's failure is what the caller needs; these handles are of no further use.
    await Promise.all(files.map((f) => f.close().catch(() => undefined)));
    throw err;
  }
}
