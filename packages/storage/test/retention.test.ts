/**
 * Goal: retention deletes whole sealed segments from the head as its bounds say, never the
 * active segment, never at or above the floor, never leaving a gap when an unlink fails; bounds
 * changed on an open log apply at once. Split from segment-log.test.ts (it had passed 800 lines).
 * Method: real files in a scratch directory, a FaultyIo or a DelegatingIo where an unlink must
 * fail or wait; synchronisation through the log's own promises and `waitFor`, never sleeps.
 */
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { LogClosedError } from '../src/errors.js';
import { DelegatingIo } from '../src/io/delegating-io.js';
import { FaultyIo } from '../src/io/faulty-io.js';
import { nodeIo } from '../src/io/node-io.js';
import { openLog, payload, readAll, scratchRoot, text } from './helpers.js';

describe('SegmentLog retention', () => {
  it('retention_never_deletes_the_active_segment', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, {
      segmentBytes: 4096,
      retention: { maxBytes: 1, maxAgeMs: 1 },
    });
    for (let i = 0; i < 30; i++) await log.append([payload(i, 300)], { timestampMicros: 1000 + i });
    expect(log.segmentCount).toBeGreaterThan(2);
    const tail = log.tailOffset;
    await log.enforceRetention(Date.now() * 1000);
    expect(log.segmentCount).toBe(1);
    expect(log.tailOffset).toBe(tail);
    const r = await log.read(log.baseOffset);
    expect(r.kind === 'records' && r.records.at(-1)?.offset).toBe(tail - 1);
    await log.close();
  });

  it('retention_never_deletes_at_or_above_the_retention_floor', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096, retention: { maxBytes: 1 } });
    for (let i = 0; i < 40; i++) await log.append([payload(i, 300)]);
    expect(log.segmentCount).toBeGreaterThan(3);
    log.setRetentionFloor(0);
    expect(await log.enforceRetention()).toBe(0);
    expect(log.baseOffset).toBe(0);
    log.setRetentionFloor(20);
    await log.enforceRetention();
    expect(log.baseOffset).toBeGreaterThan(0);
    expect(log.baseOffset).toBeLessThanOrEqual(20);
    const r = await log.read(20, { maxRecords: 1 });
    expect(r.kind === 'records' && r.records[0]?.offset).toBe(20);
    await log.trimBelow(log.tailOffset);
    expect(log.baseOffset).toBeLessThanOrEqual(20);
    log.setRetentionFloor(undefined);
    await log.enforceRetention();
    expect(log.segmentCount).toBe(1);
    await log.close();
  });

  it('a_trim_held_by_the_floor_happens_when_the_floor_rises', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    for (let i = 0; i < 40; i++) await log.append([payload(i, 300)]);
    log.setRetentionFloor(0);
    const cut = await log.seal();
    expect(await log.trimBelow(cut)).toBeGreaterThan(2); // segments below the cut: all held
    expect(log.baseOffset).toBe(0);
    expect(log.trimWaiting).toBe(true);
    // No new cut is asked: raising the floor alone lets go what the last cut held.
    log.setRetentionFloor(20);
    await waitFor(() => log.baseOffset > 0, 'the floor raised to 20 lets the head go', 5_000);
    expect(log.baseOffset).toBeLessThanOrEqual(20);
    expect(log.trimWaiting).toBe(true); // what lies between 20 and the cut still waits
    log.setRetentionFloor(5); // lowering it deletes nothing
    log.setRetentionFloor(undefined);
    await waitFor(() => log.baseOffset === cut, 'no floor: the whole cut goes', 5_000);
    expect(log.trimWaiting).toBe(false);
    expect(await readAll(log, undefined, 7)).toEqual([]);
    await log.append([payload(40)]);
    expect((await readAll(log, undefined, 7))[0]).toBe(`${cut}:${text(payload(40))}`);
    await log.close();
  });

  it('a_failed_unlink_during_retention_never_leaves_a_gap_that_refuses_the_next_open', async () => {
    const root = await scratchRoot();
    const io = new FaultyIo(nodeIo);
    const opts = { segmentBytes: 4096, preallocateBytes: 0, io };
    const log = await openLog(root, { ...opts, retention: { maxBytes: 3 * 4096 } });
    for (let i = 0; i < 20; i++) await log.append([payload(i, 1900)]);
    const segments = log.segmentCount;
    expect(segments).toBeGreaterThan(5);
    io.failUnlinks('EIO');
    await expect(log.enforceRetention()).rejects.toMatchObject({ code: 'EIO' });
    // The segment whose unlink failed is still the log's head, and still reads.
    expect(log.baseOffset).toBe(0);
    expect(log.segmentCount).toBe(segments);
    const head = await log.read(0, { maxRecords: 1 });
    expect(head.kind === 'records' && text(head.records[0]!.payload)).toMatch(/^record-0-/);
    // The next pass retries it first, then goes on to the newer ones.
    expect(await log.enforceRetention()).toBeGreaterThan(0);
    expect(log.baseOffset).toBeGreaterThan(0);
    // Compaction's head trim goes the same way.
    const base = log.baseOffset;
    io.failUnlinks('EIO');
    await expect(log.trimBelow(log.tailOffset)).rejects.toMatchObject({ code: 'EIO' });
    expect(log.baseOffset).toBe(base);
    const kept = await readAll(log, undefined, 7);
    await log.close();
    const again = await openLog(root, opts);
    expect(again.baseOffset).toBe(base);
    expect(await readAll(again, undefined, 7)).toEqual(kept);
    expect(kept.at(-1)).toMatch(/^19:record-19-/);
    await again.close();
  });

  it('retention_changed_on_an_open_log_applies_at_once_and_by_its_timer', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096 });
    for (let i = 0; i < 30; i++) await log.append([payload(i, 300)]);
    const segments = log.segmentCount;
    expect(segments).toBeGreaterThan(2);
    // No bound: the log keeps everything, and an unchanged setting does nothing.
    expect(await log.setRetention(undefined)).toBe(0);
    // A bound set on the open log deletes at once what it no longer allows.
    const deleted = await log.setRetention({ maxBytes: 4096 * 2 });
    expect(deleted).toBeGreaterThan(0);
    expect(log.segmentCount).toBe(segments - deleted);
    expect(await log.setRetention({ maxBytes: 4096 * 2 })).toBe(0);
    // A bad bound is refused as it is at open, and the one in force stays.
    await expect(log.setRetention({ maxBytes: 0 })).rejects.toThrow(/retention.maxBytes/);
    // Its timer runs by the new bounds: more records, trimmed without a call.
    await log.setRetention({ maxBytes: 4096 * 2, checkIntervalMs: 10 });
    for (let i = 30; i < 60; i++) await log.append([payload(i, 300)]);
    await waitFor(() => log.segmentCount <= 3 || undefined, 'the timer to trim', 5_000);
    // Removed again: nothing more is deleted.
    await log.setRetention({});
    const kept = log.segmentCount;
    for (let i = 60; i < 90; i++) await log.append([payload(i, 300)]);
    expect(await log.enforceRetention()).toBe(0);
    expect(log.segmentCount).toBeGreaterThan(kept);
    await log.close();
    await expect(log.setRetention({ maxBytes: 1 })).rejects.toBeInstanceOf(LogClosedError);
  });

  it('a_retention_tightened_while_a_pass_is_deleting_is_applied_by_the_call_not_the_next_tick', async () => {
    // setRetention promises "a pass run at once" by the new bounds; while a timer pass is
    // deleting (here held at its first unlink) the call joined that pass, which counted its
    // segments by the old bound, and the new one waited for the next tick of the timer (found
    // by review). It now runs one more pass after the one it joins.
    const root = await scratchRoot();
    let hold: Promise<void> | undefined;
    let release = (): void => undefined;
    let held = 0;
    class HeldUnlinks extends DelegatingIo {
      override async unlink(path: string): Promise<void> {
        if (hold !== undefined && path.endsWith('.log')) {
          held++;
          const h = hold;
          hold = undefined;
          await h;
        }
        return super.unlink(path);
      }
    }
    const io = new HeldUnlinks(nodeIo);
    const opts = { segmentBytes: 4096, preallocateBytes: 0, io };
    const log = await openLog(root, { ...opts, retention: { maxBytes: 8 * 4096 } });
    for (let i = 0; i < 40; i++) await log.append([payload(i, 1900)]);
    expect(log.segmentCount).toBeGreaterThan(12);
    hold = new Promise<void>((r) => {
      release = r;
    });
    const oldPass = log.enforceRetention();
    await waitFor(() => held === 1 || undefined, 'the old pass to reach its first unlink');
    const tightened = log.setRetention({ maxBytes: 2 * 4096 });
    release();
    await oldPass;
    await tightened;
    // The bound in force now allows about two segments: the call must have applied it.
    expect(log.segmentCount).toBeLessThanOrEqual(3);
    await log.close();
  });

  it('retention_by_age_keeps_segments_holding_a_recent_record', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 4096, retention: { maxAgeMs: 60_000 } });
    const now = 10_000_000_000;
    // Old records first, then one recent record inside a segment that otherwise is old.
    for (let i = 0; i < 20; i++) await log.append([payload(i, 300)], { timestampMicros: 1000 });
    await log.append([payload(20, 300)], { timestampMicros: now - 1000 });
    for (let i = 21; i < 40; i++) await log.append([payload(i, 300)], { timestampMicros: now });
    await log.enforceRetention(now);
    const r = await log.read(log.baseOffset, { maxRecords: 1 });
    expect(r.kind).toBe('records');
    expect(log.baseOffset).toBeGreaterThan(0);
    expect(log.baseOffset).toBeLessThanOrEqual(20);
    await log.close();
  });
});
