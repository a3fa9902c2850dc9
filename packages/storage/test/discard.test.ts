/**
 * Goal: a deleted shard's directory leaves its path in one durable step, so a log opened there
 * again starts empty (its records, `replica` and `generations` files gone with it), and a tree
 * left aside by a crash before its removal finished is removed by the sweep at the next start.
 * Method: a real log with records and a replica file, closed, discarded; a new log opened at the
 * same path; the tree aside swept (as a broker restarting does).
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeIo } from '../src/io/node-io.js';
import { DISCARDED_PREFIX, discardShardDir, sweepDiscarded } from '../src/log/discard.js';
import { ReplicaFile } from '../src/replica/replica-file.js';
import { SHARD, openLog, payload, scratchRoot, shardDir } from './helpers.js';

describe('discarding a deleted shard directory', () => {
  it('a_discarded_shard_directory_leaves_its_path_at_once_and_is_swept_at_the_next_start', async () => {
    const root = await scratchRoot();
    const log = await openLog(root);
    await log.append([payload(0), payload(1), payload(2)]);
    const replica = await ReplicaFile.open(nodeIo, log.dir);
    expect(await replica.accept(7)).toBe(true);
    await log.close();

    const aside = await discardShardDir(nodeIo, root, SHARD);
    expect(aside).not.toBeNull();
    expect(dirname(aside!)).toBe(root);
    expect(basename(aside!).startsWith(DISCARDED_PREFIX)).toBe(true);
    expect(existsSync(shardDir(root))).toBe(false);
    // Nothing left at the path: a second discard finds nothing.
    expect(await discardShardDir(nodeIo, root, SHARD)).toBeNull();

    const again = await openLog(root);
    expect(again.tailOffset).toBe(0);
    expect((await ReplicaFile.open(nodeIo, again.dir)).state.generation).toBe(0);
    await again.close();

    // A crash before the tree aside was removed: the next start's sweep removes it, only it.
    expect(await sweepDiscarded(nodeIo, root)).toEqual([aside]);
    expect(await readdir(root)).toEqual([basename(shardDir(root))]);
    expect(await sweepDiscarded(nodeIo, `${root}/missing`)).toEqual([]);
  });
});
