/**
 * Goal: the floor a leader holds a riding log's trims at (trim-hold.ts) is the lowest offset
 * confirmed by the followers that count as in sync: caught up within the lag window, or never
 * caught up but within one window of the shipper's start; a stopped follower never counts.
 * Method: the pure rule over hand-made follower states at chosen moments.
 */
import { describe, expect, it } from 'vitest';
import { trimFloor } from '../src/cluster/trim-hold.js';

const WINDOW_MS = 1_000;

describe('trim floor', () => {
  it('a_follower_never_caught_up_holds_the_trims_for_one_window_from_its_shippers_start', () => {
    const fresh = { confirmed: 0, caughtUpAtMs: undefined, stopped: false };
    const level = { confirmed: 500, caughtUpAtMs: 10_400, stopped: false };
    // Shipper started at 10 000: the fresh follower holds everything for one window.
    expect(trimFloor([level, fresh], 10_500, 10_000, WINDOW_MS)).toBe(0);
    expect(trimFloor([level, fresh], 11_000, 10_000, WINDOW_MS)).toBe(0);
    // Past it, only the follower caught up within the window holds the trims.
    expect(trimFloor([level, fresh], 11_001, 10_000, WINDOW_MS)).toBe(500);
    expect(trimFloor([level, fresh], 11_401, 10_000, WINDOW_MS)).toBeUndefined();
    // A stopped follower never holds them, however recent.
    expect(trimFloor([{ ...level, stopped: true }, fresh], 10_500, 10_000, WINDOW_MS)).toBe(0);
    expect(trimFloor([{ ...level, stopped: true }], 10_500, 10_000, WINDOW_MS)).toBeUndefined();
  });
});
