/**
 * Goal: a group delete's removal of a page of dead letters is one batch of the delete records a
 * single removal writes, so a power loss while it is written leaves the log openable with a
 * prefix of the page removed and every other dead letter still listed (never a corrupt or
 * half-read store), and a retry of the removal on the reopened store removes the rest.
 * Method: the dead-letter store on PowerLossIo (an in-memory disk keeping what was synced and
 * any subset of unsynced sector writes), the power cut after every operation count the removal
 * makes (sized by a dry run), each cut with a few seeds for which sectors survive.
 */
import { describe, expect, it } from 'vitest';
import { type GroupShard, openDeadLetterStore } from '../src/group/group-stores.js';
import { prng } from './helpers.js';
import { PowerLossIo } from './support/power-loss-io.js';

const shard: GroupShard = { tenant: 't', namespace: 'n', stream: 'orders', shard: 0 };
/** A page of removals long enough to span many 512-byte sectors. */
const PAGE = 300;
const SEEDS_PER_CUT = 5;

async function diskWithDeadLetters(): Promise<PowerLossIo> {
  const io = new PowerLossIo();
  await io.mkdir('/data');
  const store = openDeadLetterStore({ root: '/data', io, fsync: 'onCommit' });
  await Promise.all([...Array(PAGE).keys()].map((o) => store.record(shard, 'g', o)));
  await store.record(shard, 'other', 7);
  expect(await store.redrive(shard, 'g', 3)).toBe(true);
  await store.close();
  return io;
}

async function offsetsOf(io: PowerLossIo, group: string): Promise<number[]> {
  const store = openDeadLetterStore({ root: '/data', io });
  try {
    const out: number[] = [];
    await store.each(shard, group, (d) => {
      out.push(d.offset);
    });
    return out;
  } finally {
    await store.close();
  }
}

/** Opens the disk, removes the page with the power cut after `cut` operations (never, when
 *  undefined), and answers the disk the loss left (or the live one). */
async function removeAndLosePower(cut: number | undefined, seed: number) {
  const io = await diskWithDeadLetters();
  const store = openDeadLetterStore({ root: '/data', io });
  await store.list(shard, 'g', 1); // opened and indexed before the cut is armed
  const before = io.operations;
  if (cut !== undefined) io.failAfter(cut, prng(seed));
  // A cut power fails the removal: what it left on disk is the answer, checked by the caller.
  const removed = await store.removeLowest(shard, 'g', PAGE).catch(() => undefined);
  if (cut === undefined) await store.close();
  return { disk: io.lost ?? io.crash(prng(seed + 7)), ops: io.operations - before, removed };
}

describe('dead-letter removal batches', () => {
  it('a_power_loss_while_a_dead_letter_removal_batch_is_written_leaves_a_prefix_removed_and_the_rest_listed', async () => {
    const dry = await removeAndLosePower(undefined, 1);
    expect(dry.removed).toBe(PAGE);
    expect(await offsetsOf(dry.disk, 'g')).toEqual([]);
    let torn = 0;
    for (let cut = 0; cut <= dry.ops; cut++) {
      for (let s = 0; s < SEEDS_PER_CUT; s++) {
        const { disk } = await removeAndLosePower(cut, 1000 * cut + s + 1);
        const left = await offsetsOf(disk, 'g');
        // The records that reached the disk are a prefix of the batch: the removals made are the
        // lowest offsets, and everything above them is still listed.
        const kept = PAGE - left.length;
        if (kept > 0 && kept < PAGE) torn++;
        expect(left, `cut ${cut} seed ${s}`).toEqual([...Array(PAGE).keys()].slice(kept));
        expect(await offsetsOf(disk, 'other')).toEqual([7]);
        // The client's retry of the delete removes the rest.
        const retry = openDeadLetterStore({ root: '/data', io: disk });
        expect(await retry.removeLowest(shard, 'g', PAGE)).toBe(left.length);
        await retry.close();
        expect(await offsetsOf(disk, 'g')).toEqual([]);
      }
    }
    // Some losses tore the batch itself (its first sectors kept, later ones lost).
    expect(torn).toBeGreaterThan(0);
  });
});
