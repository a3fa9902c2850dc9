/**
 * Goal: a follower SIGKILLed while it appends returns with every record it answered for, a
 * `replica` file whose generation is at least that of every record it holds (a raised
 * generation is saved before the batch carrying it is stored), and a commit offset no higher
 * than what it was told (it is saved behind the answers, so it may be behind); and a batch of a
 * newer generation truncates nothing at or below that offset, while the new leader's diverging
 * suffix replaces the follower's uncommitted one.
 * Method: a child process (fixtures/follower-writer.ts, its `replica` saves slowed) runs a
 * ReplicaServer fed batches until it is SIGKILLed right after answering the batch that raised a
 * random generation; the test then opens the same directory with a new ReplicaServer and sends
 * it a newer generation's batches.
 */
import { join, resolve } from 'node:path';
import { GenerationStarts, ReplicaFile, SegmentLog, nodeIo, shardDirName } from '@felix/storage';
import { spawnNode, tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { committedFrame } from '../src/frames.js';
import { SHARD, SimFollower, decodeFrame, shardRef } from './support/sim.js';

const REPO = resolve(import.meta.dirname, '../../..');
const WRITER = resolve(import.meta.dirname, 'fixtures/follower-writer.ts');
const text = (s: string) => new TextEncoder().encode(s);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Acked {
  acked: number;
  told: number;
  gen: number;
}

/** Runs the writer until it answered the first batch of generation `gen` (which raised it),
 *  then SIGKILLs it at once. */
async function crashedFollower(root: string, gen: number): Promise<Acked> {
  const child = spawnNode(['--import', 'tsx', WRITER, root], { cwd: REPO });
  cleanups.push(() => child.kill());
  await child.waitForOutput(`"gen":${gen}}`, `generation ${gen}`, 60_000);
  await child.kill();
  const lines = child.jsonLines().filter((l): l is Acked => typeof (l as Acked).acked === 'number');
  return lines.at(-1)!;
}

async function payloadsOf(root: string): Promise<string[]> {
  const log = await SegmentLog.open({ root, shard: SHARD, fsync: 'onCommit' });
  try {
    const out: string[] = [];
    for (let at = log.baseOffset; at < log.tailOffset; ) {
      const r = await log.read(at);
      if (r.kind !== 'records') throw new Error(`trimmed at ${at}`);
      for (const rec of r.records) out.push(new TextDecoder().decode(rec.payload));
      at = r.next;
    }
    return out;
  } finally {
    await log.close();
  }
}

describe('a follower killed mid-write', () => {
  it('a_follower_killed_mid_write_returns_with_every_record_it_answered_and_truncates_nothing_committed', async () => {
    for (const gen of [2 + Math.floor(Math.random() * 3), 5 + Math.floor(Math.random() * 3)]) {
      const dir = await tempDir('felix-follower-crash-');
      cleanups.push(dir.cleanup);
      const last = await crashedFollower(dir.path, gen);
      const shardDir = join(dir.path, shardDirName(SHARD));
      const replica = (await ReplicaFile.open(nodeIo, shardDir)).state;
      const starts = await GenerationStarts.open(nodeIo, shardDir);
      // The generation of every record it holds was saved before the record was stored.
      expect(replica.generation).toBeGreaterThanOrEqual(last.gen);
      for (const s of starts.all) expect(replica.generation).toBeGreaterThanOrEqual(s.generation);
      // At most the mark of the batch after the last one printed (answered before the kill).
      expect(replica.commitOffset).toBeLessThanOrEqual(last.acked);
      const held = await payloadsOf(dir.path);
      expect(held.length).toBeGreaterThanOrEqual(last.acked);
      expect(held).toEqual(held.map((_, o) => `r${o}`));

      // A newer generation's leader: the same records up to what may have been told committed,
      // its own above.
      const f = new SimFollower(
        { root: dir.path, shard: SHARD, fsync: 'onCommit' },
        replica.generation + 1,
      );
      cleanups.push(() => f.close());
      const ref = shardRef(replica.generation + 1);
      const commit = replica.commitOffset;
      if (commit > 0) {
        // A record at or below the stored commit offset that differs is never truncated.
        const refused = decodeFrame(
          await f.handle(committedFrame(1, ref, commit - 1, [text('other')], commit - 1)),
        );
        expect(refused.kind).toBe('ReplicateError');
      }
      const from = last.acked - 1;
      const ours = [text(`r${from}`), ...[0, 1, 2].map((k) => text(`n${last.acked + k}`))];
      const ok = decodeFrame(await f.handle(committedFrame(2, ref, from, ours, from)));
      expect(ok).toMatchObject({ kind: 'ReplicateOk', durableOffset: last.acked + 3 });
      await f.server.release(ref);
      const after = await payloadsOf(dir.path);
      expect(after.slice(0, last.acked)).toEqual(held.slice(0, last.acked));
      expect(after.slice(last.acked)).toEqual([
        'n' + last.acked,
        `n${last.acked + 1}`,
        `n${last.acked + 2}`,
      ]);
    }
  });
});
