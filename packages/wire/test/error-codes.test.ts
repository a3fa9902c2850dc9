// Goal: the one error-code table answers both ways (name by number, number by name) and gives
// each code its default retry class, keeping unknown codes and classes instead of failing.
// Method: every row of ERROR_CODES through each lookup, plus names and numbers it lacks.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY,
  ERROR_CODES,
  ERROR_CODE_NAMES,
  ERROR_CODE_NUMBERS,
  RETRY_BYTES,
  RETRY_NAMES,
  defaultRetryFor,
  errorCodeName,
  errorCodeNumber,
  retryByte,
  retryClass,
} from '../src/index.js';

describe('error code table', () => {
  it('every_code_is_found_by_name_and_by_number_with_its_default_retry_class', () => {
    for (const row of ERROR_CODES) {
      expect(ERROR_CODE_NAMES[row.code]).toBe(row.name);
      expect(ERROR_CODE_NUMBERS[row.name]).toBe(row.code);
      expect(errorCodeName(row.code)).toBe(row.name);
      expect(errorCodeNumber(row.name)).toBe(row.code);
      expect(DEFAULT_RETRY[row.name]).toBe(RETRY_NAMES[row.retry]);
      expect(defaultRetryFor(row.name)).toBe(RETRY_NAMES[row.retry]);
    }
    for (const [name, byte] of Object.entries(RETRY_BYTES)) {
      expect(RETRY_NAMES[byte]).toBe(name);
      expect(retryByte(name)).toBe(byte);
    }
  });

  it('unknown_codes_and_classes_are_kept_or_read_as_fatal', () => {
    expect(errorCodeName(99)).toBe('code_99');
    expect(errorCodeNumber('toString')).toBe(0);
    expect(defaultRetryFor('constructor')).toBe('fatal');
    expect(retryClass('weird')).toBe('fatal');
    expect(retryClass(42)).toBe('fatal');
    expect(retryByte('hasOwnProperty')).toBe(5);
  });
});
