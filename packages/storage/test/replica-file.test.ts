/**
 * Goal: the `replica` file (highest accepted generation, commit offset) decodes only what was
 * encoded, is authoritative (damage fails the open with a typed error), never moves backwards,
 * and is atomic: a power loss or a SIGKILL mid-save leaves the old state or the new one.
 * Method: property tests of the pure codec; PowerLossIo (only synced data and synced directory
 * entries survive) cut at every operation of a save; a child process SIGKILLed while saving.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Child, spawnNode, waitFor } from '@felix/testing-harness';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaStateCorruptError } from '../src/errors.js';
import { DelegatingIo } from '../src/io/delegating-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { REPLICA_FILE } from '../src/log/layout.js';
import { ReplicaFile } from '../src/replica/replica-file.js';
import {
  REPLICA_STATE_BYTES,
  type ReplicaState,
  decodeReplicaState,
  encodeReplicaState,
} from '../src/replica/replica-state.js';
import { PowerLossIo } from './support/power-loss-io.js';
import { prng } from './helpers.js';

const REPO = resolve(import.meta.dirname, '../../..');
const WRITER = resolve(import.meta.dirname, 'fixtures/replica-writer.ts');

const states = fc.record({
  generation: fc.maxSafeNat(),
  commitOffset: fc.maxSafeNat(),
  retentionHeld: fc.boolean(),
});

let dirs: string[] = [];
let child: Child | undefined;
afterEach(async () => {
  await child?.kill();
  child = undefined;
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  dirs = [];
});

async function scratch(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'felix-replica-'));
  dirs.push(d);
  return d;
}

/** Counts the saves that reach the disk (one rename each). */
class CountingIo extends DelegatingIo {
  renames = 0;
  override rename(from: string, to: string): Promise<void> {
    this.renames++;
    return super.rename(from, to);
  }
}

describe('replica state codec', () => {
  it('the_replica_state_round_trips_through_its_28_byte_encoding', () => {
    fc.assert(
      fc.property(states, (s) => {
        const bytes = encodeReplicaState(s);
        expect(bytes.length).toBe(REPLICA_STATE_BYTES);
        expect(decodeReplicaState(bytes)).toEqual(s);
      }),
    );
  });

  it('the_replica_state_decoder_answers_any_bytes_with_a_state_or_a_reason', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const r = decodeReplicaState(bytes);
        // Random bytes essentially never carry the magic and a matching checksum.
        expect(typeof r === 'string' || encodeReplicaState(r).every((b, i) => b === bytes[i])).toBe(
          true,
        );
      }),
    );
    fc.assert(
      fc.property(states, fc.nat({ max: REPLICA_STATE_BYTES * 8 - 1 }), (s, bit) => {
        const bytes = encodeReplicaState(s);
        bytes[bit >> 3]! ^= 1 << (bit & 7);
        // Any one flipped bit is caught (by the checksum, or the checks before it).
        expect(typeof decodeReplicaState(bytes)).toBe('string');
      }),
    );
  });
});

describe('replica file', () => {
  it('an_absent_replica_file_opens_at_generation_zero_and_commit_zero', async () => {
    const file = await ReplicaFile.open(nodeIo, await scratch());
    expect(file.state).toEqual({ generation: 0, commitOffset: 0, retentionHeld: false });
  });

  it('a_damaged_replica_file_fails_the_open_with_a_typed_error', async () => {
    const dir = await scratch();
    const good = encodeReplicaState({ generation: 7, commitOffset: 70, retentionHeld: false });
    for (const bad of [good.subarray(0, 20), new Uint8Array(REPLICA_STATE_BYTES), flip(good, 9)]) {
      await writeFile(join(dir, REPLICA_FILE), bad);
      const err = await ReplicaFile.open(nodeIo, dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ReplicaStateCorruptError);
      expect((err as ReplicaStateCorruptError).code).toBe('FELIX_STORAGE_REPLICA_STATE_CORRUPT');
    }
  });

  it('a_replica_never_lowers_its_generation_or_commit_offset_and_keeps_them_across_a_reopen', async () => {
    const dir = await scratch();
    const file = await ReplicaFile.open(nodeIo, dir);
    expect(await file.accept(5)).toBe(true);
    await file.advanceCommit(40);
    // An older leader is refused; a lower commit offset changes nothing.
    expect(await file.accept(4)).toBe(false);
    expect(await file.accept(5)).toBe(true);
    await file.advanceCommit(30);
    await file.holdRetention(true);
    const reopened = await ReplicaFile.open(nodeIo, dir);
    expect(reopened.state).toEqual({ generation: 5, commitOffset: 40, retentionHeld: true });
  });

  it('updates_made_while_a_replica_save_runs_fold_into_one_save', async () => {
    const io = new CountingIo(nodeIo);
    const file = await ReplicaFile.open(io, await scratch());
    const commits = Array.from({ length: 100 }, (_, i) => file.advanceCommit(i + 1));
    await Promise.all([...commits, file.accept(3)]);
    // Updates made before the save starts share it: 101 updates, one write of the file.
    expect(io.renames).toBe(1);
    await Promise.all([file.advanceCommit(200), file.advanceCommit(300)]);
    expect(io.renames).toBe(2);
    expect(file.state).toEqual({ generation: 3, commitOffset: 300, retentionHeld: false });
  });

  it('a_replica_file_update_resolves_only_once_its_state_is_saved', async () => {
    // Asking again for what a queued save will write waits for that save.
    const held = await ReplicaFile.open(nodeIo, await scratch());
    const first = held.holdRetention(true);
    await held.holdRetention(true);
    expect(held.state.retentionHeld).toBe(true);
    await first;
    // After a failed save nothing reports success: the file's state is unknown.
    let failNext = true;
    const io = new (class extends DelegatingIo {
      override rename(from: string, to: string): Promise<void> {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('EIO'));
        }
        return super.rename(from, to);
      }
    })(nodeIo);
    const failing = await ReplicaFile.open(io, await scratch());
    await expect(failing.advanceCommit(10)).rejects.toThrow('EIO');
    await expect(failing.advanceCommit(10)).rejects.toThrow('EIO');
    await expect(failing.accept(0)).rejects.toThrow('EIO');
    expect(failing.state.commitOffset).toBe(0);
  });

  it('a_power_loss_during_a_replica_save_leaves_the_old_or_the_new_state', async () => {
    const before: ReplicaState = { generation: 2, commitOffset: 20, retentionHeld: false };
    const after: ReplicaState = { generation: 3, commitOffset: 35, retentionHeld: false };
    const seen = new Set<number>();
    for (let ops = 0; ops < 12; ops++) {
      for (let seed = 1; seed <= 8; seed++) {
        const io = new PowerLossIo();
        await io.mkdir('/shard');
        const file = await ReplicaFile.open(io, '/shard');
        await file.accept(before.generation);
        await file.advanceCommit(before.commitOffset);
        io.failAfter(ops, prng(seed * 31 + ops));
        const saved = await file
          .accept(after.generation)
          .then(() => file.advanceCommit(after.commitOffset))
          .then(
            () => true,
            () => false,
          );
        const disk = io.lost ?? io.crash(prng(seed));
        const state = (await ReplicaFile.open(disk, '/shard')).state;
        if (saved) expect(state).toEqual(after);
        else expect([before, after, { ...after, commitOffset: 20 }]).toContainEqual(state);
        seen.add(state.generation);
      }
    }
    // The cut points reach both outcomes.
    expect([...seen].sort()).toEqual([2, 3]);
  });

  it('a_killed_process_leaves_the_replica_state_it_last_saved_or_a_later_one', async () => {
    const dir = await scratch();
    let floor = 0;
    for (let round = 0; round < 5; round++) {
      child = spawnNode(['--import', 'tsx', WRITER, dir], { cwd: REPO });
      const c = child;
      await c.waitForOutput('"ready"', 'the writer to open its replica file', 30_000);
      const saved = () =>
        c
          .jsonLines()
          .filter(
            (l): l is { saved: number } => typeof (l as { saved?: number }).saved === 'number',
          );
      await waitFor(() => saved().length >= 20 + round * 7, 'saves to be acknowledged', 30_000);
      await c.kill();
      child = undefined;
      const last = Math.max(...saved().map((l) => l.saved));
      const state = (await ReplicaFile.open(nodeIo, dir)).state;
      // Every acknowledged save is there; at most the one in flight went further.
      expect(state.generation).toBeGreaterThanOrEqual(last);
      expect(state.generation).toBeLessThanOrEqual(last + 1);
      expect(state.generation).toBeGreaterThan(floor);
      floor = state.generation;
    }
  }, 120_000);
});

function flip(bytes: Uint8Array, at: number): Uint8Array {
  const out = bytes.slice();
  out[at]! ^= 0x10;
  return out;
}
