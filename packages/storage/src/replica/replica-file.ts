/**
 * A shard's `replica` file on disk: read at open (absent = never accepted a generation,
 * undecodable = ReplicaStateCorruptError), saved by writing `replica.tmp`, syncing it,
 * renaming it over `replica` and syncing the directory, so a crash leaves the old state or the
 * new one, never a torn one. Updates made while a save runs are folded into the next single
 * save: at most one save runs and one waits, whatever the number of callers.
 */
import { join } from 'node:path';
import { assert } from '@felix/common';
import { ReplicaStateCorruptError } from '../errors.js';
import { type Io, readFully, replaceFileDurably } from '../io/io.js';
import { REPLICA_FILE } from '../log/layout.js';
import {
  REPLICA_STATE_BYTES,
  REPLICA_STATE_INITIAL,
  type ReplicaState,
  decodeReplicaState,
  encodeReplicaState,
} from './replica-state.js';

export class ReplicaFile {
  /** What the next save writes: every update asked for so far. */
  private wanted: ReplicaState;
  private saving: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  /** A save that failed: what is on disk is unknown, so every later update fails too. */
  private failed: unknown;

  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private durable: ReplicaState,
  ) {
    this.wanted = durable;
  }

  /** Reads the shard's replica state; a present file that does not decode fails the open. */
  static async open(io: Io, dir: string): Promise<ReplicaFile> {
    const path = join(dir, REPLICA_FILE);
    if (!(await io.exists(path))) return new ReplicaFile(io, dir, { ...REPLICA_STATE_INITIAL });
    const file = await io.open(path, 'read');
    let bytes: Uint8Array;
    try {
      const size = await file.size();
      // Bounded before allocating: anything but the fixed size is damage.
      if (size !== REPLICA_STATE_BYTES)
        throw new ReplicaStateCorruptError(path, `${size} bytes, expected ${REPLICA_STATE_BYTES}`);
      bytes = new Uint8Array(size);
      await readFully(file, bytes, 0, size, 0);
    } finally {
      await file.close();
    }
    const state = decodeReplicaState(bytes);
    if (typeof state === 'string') throw new ReplicaStateCorruptError(path, state);
    return new ReplicaFile(io, dir, state);
  }

  /** The state as last saved. */
  get state(): Readonly<ReplicaState> {
    return this.durable;
  }

  /**
   * Durably records `generation` as accepted when it is not older than any accepted before;
   * resolves false (and writes nothing) for an older one, whose leader is fenced.
   */
  async accept(generation: number): Promise<boolean> {
    checkCount('generation', generation);
    if (generation <= this.wanted.generation) {
      await this.settled();
      return generation === this.wanted.generation;
    }
    await this.update((s) => ({ ...s, generation }));
    return true;
  }

  /** Moves the commit offset forward and saves it; an offset at or below it changes nothing. */
  async advanceCommit(offset: number): Promise<void> {
    checkCount('commit offset', offset);
    if (offset <= this.wanted.commitOffset) return this.settled();
    await this.update((s) => ({ ...s, commitOffset: offset }));
  }

  /** Holds (or releases) retention at the commit offset. */
  async holdRetention(held: boolean): Promise<void> {
    if (held === this.wanted.retentionHeld) return this.settled();
    await this.update((s) => ({ ...s, retentionHeld: held }));
  }

  private update(change: (s: ReplicaState) => ReplicaState): Promise<void> {
    this.throwIfFailed();
    this.wanted = change(this.wanted);
    if (this.queued === undefined) {
      const run = this.saving.then(() => {
        this.queued = undefined;
        return this.save(this.wanted);
      });
      this.queued = run;
      this.saving = run.catch((err: unknown) => {
        this.failed = err;
      });
    }
    return this.queued;
  }

  private async save(state: ReplicaState): Promise<void> {
    this.throwIfFailed();
    const path = join(this.dir, REPLICA_FILE);
    await replaceFileDurably(this.io, this.dir, path, encodeReplicaState(state));
    this.durable = state;
  }

  /** Nothing new to write: waits for the save that writes what was asked (it may be queued),
   *  and fails if a save failed, since what the file holds is then unknown. */
  private async settled(): Promise<void> {
    this.throwIfFailed();
    await (this.queued ?? this.saving);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failed !== undefined) throw this.failed;
  }
}

/** Generations and offsets come from the replication layer's own checked frames. */
function checkCount(what: string, n: number): void {
  assert(Number.isSafeInteger(n) && n >= 0, `${what} must be a non-negative safe integer: ${n}`);
}
