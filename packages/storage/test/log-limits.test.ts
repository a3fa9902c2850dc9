/**
 * Goal: the segment log's bounds fit together and its errors carry stable codes.
 * Method: assert the relationships between limits the code relies on, and the code and
 * retry class of each log error.
 */
import { FelixError } from '@felix/common';
import { describe, expect, it } from 'vitest';
import {
  AppendQueueFullError,
  CorruptionError,
  EmptyBatchError,
  LogClosedError,
  LogPoisonedError,
  RecordTooLargeError,
  type StorageError,
  SupersededError,
  TurnCancelledError,
  WriteFailedError,
  WritesRefusedError,
} from '../src/errors.js';
import {
  APPEND_QUEUE_BYTES_MAX,
  FLUSH_WAIT_QUEUED_BYTES_MAX,
  INDEX_SPACING_BYTES_DEFAULT,
  RECORD_PAYLOAD_BYTES_MAX,
  SCAN_CHUNK_BYTES,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  WRITE_COALESCE_BYTES_MAX,
} from '../src/limits.js';
import {
  PRODUCER_TAG_BYTES,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
} from '../src/segment/format.js';

describe('segment log limits', () => {
  it('the_log_bounds_fit_inside_each_other', () => {
    expect(RECORD_PAYLOAD_BYTES_MAX).toBeLessThan(2 ** 26);
    expect(SEGMENT_BYTES_MIN).toBeGreaterThan(SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES);
    expect(SEGMENT_BYTES_MIN).toBeLessThanOrEqual(SEGMENT_BYTES_DEFAULT);
    expect(SEGMENT_BYTES_DEFAULT).toBeLessThanOrEqual(SEGMENT_BYTES_MAX);
    expect(SEGMENT_BYTES_MAX).toBeLessThan(Number.MAX_SAFE_INTEGER);
    // The largest record (header, tag, body) fits one queued batch.
    expect(RECORD_HEADER_BYTES + PRODUCER_TAG_BYTES + RECORD_PAYLOAD_BYTES_MAX).toBeLessThan(
      APPEND_QUEUE_BYTES_MAX,
    );
    expect(WRITE_COALESCE_BYTES_MAX).toBeLessThanOrEqual(APPEND_QUEUE_BYTES_MAX);
    expect(FLUSH_WAIT_QUEUED_BYTES_MAX).toBeLessThanOrEqual(APPEND_QUEUE_BYTES_MAX);
    expect(INDEX_SPACING_BYTES_DEFAULT).toBeLessThan(SCAN_CHUNK_BYTES);
  });

  it('every_log_error_carries_a_stable_storage_code', () => {
    const site = { shardDir: '/d', segmentId: 1, position: 2 };
    const errors: StorageError[] = [
      new CorruptionError('RecordChecksum', site, 'x'),
      new LogPoisonedError('/d'),
      new WriteFailedError('/d'),
      new WritesRefusedError('/d'),
      new LogClosedError('/d'),
      new RecordTooLargeError(2, 1),
      new EmptyBatchError(),
      new AppendQueueFullError(2, 1),
      new SupersededError(0, 1),
      new TurnCancelledError(0, 1),
    ];
    const codes = errors.map((e) => e.code);
    for (const e of errors) {
      expect(e).toBeInstanceOf(FelixError);
      expect(e.code).toMatch(/^FELIX_STORAGE_[A-Z_]+$/);
      expect(e.name).toBe(e.constructor.name);
    }
    expect(new Set(codes).size).toBe(codes.length);
    expect(new WriteFailedError('/d').retry).toBe('retry_after_backoff');
    expect(new LogClosedError('/d').retry).toBe('retry');
    expect(new LogPoisonedError('/d').retry).toBe('never');
  });
});
