// Goal: the control plane's bounds agree with each other and with @felix/router's, and the
// cursor decoder (it reads untrusted query strings) only ever fails with its typed error.
// Method: direct checks of the constants; fast-check over arbitrary strings and JSON.
import { REPLICATION_FACTOR_MAX as ROUTER_RF_MAX } from '@felix/router';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidCursorError } from '../src/errors.js';
import * as L from '../src/limits.js';
import { decodeCursor, encodeCursor } from '../src/store/cursor.js';

describe('control plane limits', () => {
  it('the_control_plane_limits_agree_with_each_other', () => {
    expect(L.REPLICATION_FACTOR_MAX).toBe(ROUTER_RF_MAX);
    expect(L.PAGE_LIMIT_DEFAULT).toBeLessThanOrEqual(L.PAGE_LIMIT_MAX);
    expect(L.CHANGES_LIMIT_DEFAULT).toBeLessThanOrEqual(L.PAGE_LIMIT_MAX);
    expect(L.LONG_POLL_REREAD_INTERVAL_MS).toBeLessThan(L.LONG_POLL_WAIT_MS_MAX);
    expect(L.LONG_POLL_WAIT_MS_MAX).toBeLessThan(30_000); // under common proxy idle timeouts
    expect(L.EXPIRY_TIMEOUT_MS_DEFAULT).toBeGreaterThan(L.HEARTBEAT_INTERVAL_MS_DEFAULT);
    expect(L.INSERT_BATCH_ROWS * 11).toBeLessThan(65_535); // Postgres parameter cap
    expect(L.CHANGE_RETENTION_ROWS_DEFAULT).toBeGreaterThanOrEqual(L.CHANGES_LIMIT_DEFAULT);
    expect(L.CHANGE_TRIM_STEP_ROWS).toBeLessThanOrEqual(L.CHANGE_RETENTION_ROWS_DEFAULT);
  });

  it('a_cursor_decoder_meets_arbitrary_input_with_its_typed_error_only', () => {
    const shapes: ('s' | 'n')[][] = [['s'], ['s', 's', 's', 's', 'n']];
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.base64String(),
          fc.json().map((j) => Buffer.from(j).toString('base64url')),
        ),
        (text) => {
          for (const shape of shapes) {
            try {
              const key = decodeCursor(text, shape);
              expect(key).toHaveLength(shape.length);
            } catch (err) {
              expect(err).toBeInstanceOf(InvalidCursorError);
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
    const key = ['t1', 'ns', 'stream', 'orders', 3];
    expect(decodeCursor(encodeCursor(key), ['s', 's', 's', 's', 'n'])).toEqual(key);
    expect(() => decodeCursor('x'.repeat(L.CURSOR_CHARS_MAX + 1), ['s'])).toThrow(
      InvalidCursorError,
    );
  });
});
