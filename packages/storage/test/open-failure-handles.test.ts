/**
 * Goal: a log whose open fails on a storage fault (an fdatasync failing, as on a follower whose
 * disk fails: its replica server opens the log again on the leader's next request) closes every
 * file it opened before the failure, so repeated opens leave no file handle for the garbage
 * collector to close (Node's "Closing file descriptor N on garbage collection").
 * Method: an Io counting the handles it opened and not yet closed, over FaultyIo failing every
 * fdatasync of every file; opens of a log that exists (its active segment synced at open), of a
 * new log (its first segment created), and opens that fail only at the durable mark.
 */
import { describe, expect, it } from 'vitest';
import { DelegatingIo } from '../src/io/delegating-io.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import type { IoFile, OpenMode } from '../src/io/io.js';
import { nodeIo } from '../src/io/node-io.js';
import { DURABLE_MARK_FILE } from '../src/log/layout.js';
import { openLog, payload, scratchRoot } from './helpers.js';

const ATTEMPTS = 5;
const ALWAYS = 1_000_000;

/** The handles opened through it and not closed yet, by path. */
class CountingIo extends DelegatingIo {
  readonly held = new Set<IoFile>();

  override async open(path: string, mode: OpenMode): Promise<IoFile> {
    const file = await super.open(path, mode);
    this.held.add(file);
    const close = file.close.bind(file);
    file.close = async () => {
      this.held.delete(file);
      await close();
    };
    return file;
  }
}

describe('a log open that fails on a storage fault', () => {
  it('a_log_open_failing_on_fsync_leaves_no_file_handle_open', async () => {
    const existing = await scratchRoot();
    const before = await openLog(existing);
    await before.append([payload(0), payload(1)]);
    await before.close();
    const fresh = await scratchRoot();
    for (const [root, match] of [
      [existing, (p: string) => p.endsWith('.log')],
      [fresh, (p: string) => p.endsWith('.log')],
      [existing, (p: string) => p.endsWith(DURABLE_MARK_FILE)],
    ] as const) {
      const faulty = new FaultyIo(nodeIo);
      faulty.countSyncsOf(match);
      faulty.failDatasyncs('EIO', { times: ALWAYS, match });
      const io = new CountingIo(faulty);
      for (let i = 0; i < ATTEMPTS; i++) await expect(openLog(root, { io })).rejects.toThrow();
      expect(faulty.datasyncs).toBeGreaterThanOrEqual(ATTEMPTS);
      expect([...io.held].map((f) => f.path)).toEqual([]);
    }
    // The log opens again once the disk is healthy, holding what it held.
    const after = await openLog(existing);
    expect(after.tailOffset).toBe(2);
    await after.close();
  });
});
