// Goal: the wire bounds hold together and every error class has a unique, stable code.
// Method: relationships between limits.ts constants; instantiate each exported error.
import { describe, expect, it } from 'vitest';
import * as wire from '../src/index.js';

describe('wire limits and errors', () => {
  it('the_wire_limits_are_consistent', () => {
    expect(wire.FRAME_HEADER_BYTES).toBe(12);
    expect(wire.PREAUTH_FRAME_PAYLOAD_BYTES_MAX).toBeLessThan(wire.FRAME_PAYLOAD_BYTES_MAX_DEFAULT);
    expect(wire.FRAME_PAYLOAD_BYTES_MAX_DEFAULT).toBeLessThanOrEqual(
      wire.FRAME_PAYLOAD_BYTES_LIMIT,
    );
    expect(wire.INTERNAL_BODY_BYTES_MAX).toBeLessThanOrEqual(wire.FRAME_PAYLOAD_BYTES_LIMIT);
    expect(wire.INTERNAL_BATCH_PAYLOADS_MAX * 4).toBeLessThanOrEqual(wire.INTERNAL_BODY_BYTES_MAX);
    expect(wire.PUBLISHER_BYTES_MAX).toBe(255);
    expect(wire.OFFSET_MAX).toBe(2 ** 53 - 1);
  });

  it('every_wire_error_has_a_unique_felix_wire_code', () => {
    const classes = (Object.values(wire) as unknown[]).filter(
      (v): v is { name: string; prototype: unknown } =>
        typeof v === 'function' && v.prototype instanceof wire.WireError,
    );
    expect(classes.length).toBeGreaterThanOrEqual(14);
    const codes = classes.map((C) => {
      const error = Reflect.construct(C as unknown as Function, ['x', 1, 1, 1]) as wire.WireError;
      expect(error).toBeInstanceOf(wire.WireError);
      expect(error.name).toBe(C.name);
      return error.code;
    });
    for (const code of codes) expect(code).toMatch(/^FELIX_WIRE_[A-Z0-9_]+$/);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('error_codes_map_to_their_reference_numbers_and_retry_classes', () => {
    expect(wire.errorCodeName(5)).toBe('shard_unavailable');
    expect(wire.errorCodeNumber('stale_claim')).toBe(15);
    expect(wire.errorCodeName(99)).toBe('code_99');
    expect(wire.defaultRetryFor('not_leader')).toBe('redirect');
    expect(wire.defaultRetryFor('quorum_timeout')).toBe('outcome_unknown');
    expect(wire.retryClass(9)).toBe('fatal');
    expect(wire.retryClass('teleport')).toBe('fatal');
    expect(wire.retryByte('retry_after')).toBe(2);
  });
});
