/**
 * Goal: under `onCommit` nothing acknowledged is ever lost when the writer process dies, and
 * recovery after such a crash is idempotent.
 * Method: a child process appends with concurrent writers and reports each acknowledged
 * append; it is SIGKILLed at a random moment (after a random number of acks), for many rounds
 * over the same directory; after each kill the log is reopened and every acknowledged record
 * must read back with its bytes. The idempotence test also tears the tail by hand (cut
 * bytes, zeros, garbage) before planning recovery twice.
 * Replay a failing run with FELIX_CRASH_SEED=<seed printed in the failure>.
 */
import { readFile, readdir, stat, truncate, appendFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Child, spawnNode, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeIo } from '../src/io/node-io.js';
import { shardDirName } from '../src/log/layout.js';
import { applyRecovery, planRecovery } from '../src/log/recovery.js';
import { SegmentLog } from '../src/log/segment-log.js';
import { SHARD_FOR_CRASH_TESTS, payloadFor } from './fixtures/crash-payload.js';
import { prng, scratchRoot } from './helpers.js';

const WRITER = resolve(import.meta.dirname, 'fixtures/crash-writer.ts');
const REPO = resolve(import.meta.dirname, '../../..');
const ROUNDS = Number(process.env.FELIX_CRASH_ROUNDS ?? 20);
const SEED = Number(process.env.FELIX_CRASH_SEED ?? Date.now() % 1_000_000);

interface Ack {
  first: number;
  ids: string[];
}

let child: Child | undefined;
afterEach(async () => {
  await child?.kill();
  child = undefined;
});

function startWriter(root: string, fsync: string, round: number): Child {
  child = spawnNode(
    ['--import', 'tsx', WRITER, root, fsync, String(64 * 1024), '4', String(round)],
    {
      cwd: REPO,
    },
  );
  return child;
}

function acks(c: Child): Ack[] {
  return c.jsonLines().filter((l): l is Ack => typeof (l as Ack).first === 'number');
}

async function crashAfter(c: Child, count: number): Promise<Ack[]> {
  await c.waitForOutput('"ready"', 'the writer to open its log', 30_000);
  await waitFor(() => acks(c).length >= count, `${count} acknowledged appends`, 30_000);
  await c.kill();
  return acks(c);
}

describe('crash recovery', () => {
  it('on_commit_loses_nothing_it_acknowledged', async () => {
    const root = await scratchRoot();
    const random = prng(SEED);
    let acknowledged = 0;
    let preallocatedTailsCut = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const c = startWriter(root, 'onCommit', round);
      const got = await crashAfter(c, 1 + Math.floor(random() * 40));
      const log = await SegmentLog.open({ root, shard: SHARD_FOR_CRASH_TESTS, fsync: 'onCommit' });
      // The writer preallocates its active segment, so a kill usually leaves zeros past the data.
      if (log.recovered.some((a) => a.kind === 'truncate' && a.reason.includes('zero-filled'))) {
        preallocatedTailsCut++;
      }
      try {
        for (const ack of got) {
          const r = await log.read(ack.first, { maxRecords: ack.ids.length });
          if (r.kind !== 'records') throw new Error(`seed ${SEED}: offset ${ack.first} trimmed`);
          expect(
            r.records.map((x) => x.offset),
            `seed ${SEED} round ${round}`,
          ).toEqual(ack.ids.map((_, k) => ack.first + k));
          r.records.forEach((rec, k) => {
            expect(Buffer.compare(rec.payload, payloadFor(ack.ids[k]!)), `seed ${SEED}`).toBe(0);
          });
        }
        acknowledged += got.length;
      } finally {
        await log.close();
      }
    }
    expect(acknowledged).toBeGreaterThanOrEqual(ROUNDS);
    expect(preallocatedTailsCut).toBeGreaterThan(0);
  }, 120_000);

  it('a_killed_writer_loses_nothing_it_acknowledged_in_any_fsync_mode', async () => {
    // Killing the process keeps the page cache, so even `none` and `periodic` keep every
    // append they acknowledged as written.
    for (const fsync of ['none', 'periodic'] as const) {
      const root = await scratchRoot();
      const random = prng(SEED + 7);
      for (let round = 0; round < 3; round++) {
        const c = startWriter(root, fsync, round);
        const got = await crashAfter(c, 1 + Math.floor(random() * 40));
        const log = await SegmentLog.open({ root, shard: SHARD_FOR_CRASH_TESTS, fsync });
        try {
          for (const ack of got) {
            const r = await log.read(ack.first, { maxRecords: ack.ids.length });
            if (r.kind !== 'records') throw new Error(`seed ${SEED}: offset ${ack.first} trimmed`);
            expect(r.records.length, `seed ${SEED} ${fsync} round ${round}`).toBe(ack.ids.length);
            r.records.forEach((rec, k) => {
              expect(Buffer.compare(rec.payload, payloadFor(ack.ids[k]!)), `seed ${SEED}`).toBe(0);
            });
          }
        } finally {
          await log.close();
        }
      }
    }
  }, 120_000);

  it('recovery_is_idempotent_after_a_crash', async () => {
    const root = await scratchRoot();
    const dir = join(root, shardDirName(SHARD_FOR_CRASH_TESTS));
    const random = prng(SEED + 1);
    const snapshot = async () => {
      const out: Record<string, string> = {};
      for (const name of (await readdir(dir)).sort()) {
        out[name] = (await readFile(join(dir, name))).toString('base64');
      }
      return out;
    };
    for (let round = 0; round < 4; round++) {
      const c = startWriter(root, 'none', round);
      await crashAfter(c, 5 + Math.floor(random() * 60));
      // Tear the newest segment the ways a crash or power loss can.
      const names = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
      const newest = join(dir, names[names.length - 1]!);
      const size = (await stat(newest)).size;
      if (round === 1) await truncate(newest, Math.max(32, size - 1 - Math.floor(random() * 200)));
      if (round === 2) await appendFile(newest, new Uint8Array(1 + Math.floor(random() * 5000)));
      if (round === 3) await appendFile(newest, Buffer.from('torn garbage after the mark'));
      const first = await planRecovery(nodeIo, dir, { indexSpacingBytes: 4096 });
      await applyRecovery(nodeIo, first);
      const afterFirst = await snapshot();
      const second = await planRecovery(nodeIo, dir, { indexSpacingBytes: 4096 });
      expect(
        second.actions.map((a) => a.kind),
        `seed ${SEED} round ${round}`,
      ).toEqual(['rewriteIndex']);
      expect(second.segments).toEqual(first.segments);
      await applyRecovery(nodeIo, second);
      expect(await snapshot()).toEqual(afterFirst);
      // And the log opens on it, at the tail the plan found.
      const log = await SegmentLog.open({ root, shard: SHARD_FOR_CRASH_TESTS, fsync: 'none' });
      expect(log.tailOffset).toBe(first.segments.at(-1)!.nextOffset);
      await log.close();
    }
  }, 120_000);
});
