// Goal: `offsetForTime` answers the first offset appended at or after a time, with a bounded
// number of record reads, and append times never go backwards within a log (a clock stepped
// back stamps the newest time again), across a restart too.
// Method: real logs on disk with small segments, explicit append times, answers checked against
// a linear scan of the same times.
import { describe, expect, it, vi } from 'vitest';
import type { SegmentLog } from '../src/log/segment-log.js';
import { openLog, payload, scratchRoot } from './helpers.js';

async function timesOf(log: SegmentLog): Promise<number[]> {
  const out: number[] = [];
  let next = log.baseOffset;
  for (;;) {
    const r = await log.read(next);
    if (r.kind !== 'records' || r.records.length === 0) return out;
    for (const rec of r.records) out.push(rec.timestampMicros);
    next = r.next;
  }
}

describe('offset for a time', () => {
  it('the_log_finds_the_first_offset_appended_at_or_after_a_time_across_segments', async () => {
    const root = await scratchRoot();
    let log = await openLog(root, { segmentBytes: 4096 });
    // 60 batches of 1 to 3 records, 300 bytes each (many segments), times 1000, 1010, … with
    // some batches sharing a time.
    const times: number[] = [];
    for (let b = 0; b < 60; b++) {
      const ts = 1000 + Math.floor(b / 2) * 10;
      const n = 1 + (b % 3);
      await log.append(
        Array.from({ length: n }, (_, i) => payload(times.length + i, 300)),
        { timestampMicros: ts },
      );
      for (let i = 0; i < n; i++) times.push(ts);
    }
    expect(log.segmentCount).toBeGreaterThan(5);
    const expected = (at: number) => {
      const i = times.findIndex((t) => t >= at);
      return i === -1 ? undefined : i;
    };
    const check = async () => {
      for (let at = 990; at <= 1310; at += 5)
        expect(await log.offsetForTime(at)).toBe(expected(at));
      expect(await log.offsetForTime(0)).toBe(0);
    };
    await check();
    expect(await log.offsetForTime(1291)).toBeUndefined();
    await log.close();
    log = await openLog(root, { segmentBytes: 4096 });
    await check();
    await log.close();
  });

  it('the_offset_for_a_time_reads_a_bounded_number_of_records', async () => {
    const root = await scratchRoot();
    const log = await openLog(root, { segmentBytes: 1024 * 1024, fsync: 'none' });
    const n = 4096;
    for (let b = 0; b < n / 64; b++) {
      await log.append(
        Array.from({ length: 64 }, (_, i) => payload(b * 64 + i)),
        { timestampMicros: 5000 + b },
      );
    }
    const reads = vi.spyOn(log, 'read');
    expect(await log.offsetForTime(5000 + 37)).toBe(37 * 64);
    // One segment of 4096 records: a binary search, at most log2(4096) + 1 reads.
    expect(reads.mock.calls.length).toBeLessThanOrEqual(13);
    await log.close();
  });

  it('a_batch_stamped_before_the_newest_time_keeps_the_newest_time', async () => {
    const root = await scratchRoot();
    let log = await openLog(root);
    await log.append([payload(0)], { timestampMicros: 100 });
    await log.append([payload(1)], { timestampMicros: 200 });
    await log.append([payload(2), payload(3)], { timestampMicros: 150 }); // the clock stepped back
    await log.append([payload(4)], { timestampMicros: 300 });
    expect(await timesOf(log)).toEqual([100, 200, 200, 200, 300]);
    expect(log.newestTimestampMicros).toBe(300);
    expect(await log.offsetForTime(150)).toBe(1);
    expect(await log.offsetForTime(200)).toBe(1);
    expect(await log.offsetForTime(201)).toBe(4);
    await log.close();
    // After a restart the newest time on disk still bounds what follows.
    log = await openLog(root);
    expect(log.newestTimestampMicros).toBe(300);
    await log.append([payload(5)], { timestampMicros: 50 });
    expect(await timesOf(log)).toEqual([100, 200, 200, 200, 300, 300]);
    expect(await log.offsetForTime(300)).toBe(4);
    await log.close();
  });
});
