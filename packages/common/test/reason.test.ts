// Goal: the reason a failure gives is the deepest thing its chain of causes says, read through
// an AggregateError that says nothing itself (Node's connect to a name with two addresses), with
// the code or name when nothing says anything, on one line, and bounded on a cycle.
// Method: error chains built as fetch, Node's connect and QUIC's library make them.
import { describe, expect, it } from 'vitest';
import { errorReason } from '../src/index.js';

describe('error reasons', () => {
  it('an_error_reason_is_the_deepest_cause_that_says_something', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8443'), {
      code: 'ECONNREFUSED',
    });
    expect(errorReason(new TypeError('fetch failed', { cause: refused }))).toBe(
      'connect ECONNREFUSED 127.0.0.1:8443',
    );
    // A library error with an empty message under a wrapper that says what happened.
    const silent = new Error('');
    expect(errorReason(new Error('dial quic://h:1 failed: no handshake', { cause: silent }))).toBe(
      'dial quic://h:1 failed: no handshake',
    );
    expect(errorReason(new Error('first line\n    at stack'))).toBe('first line');
  });

  it('an_empty_aggregate_error_gives_the_reasons_of_its_errors', () => {
    const both = new AggregateError(
      [
        new Error('connect ECONNREFUSED ::1:8443'),
        new Error('connect ECONNREFUSED 127.0.0.1:8443'),
        new Error('connect ECONNREFUSED 127.0.0.1:8443'),
      ],
      '',
    );
    expect(errorReason(new TypeError('fetch failed', { cause: both }))).toBe(
      'connect ECONNREFUSED ::1:8443; connect ECONNREFUSED 127.0.0.1:8443',
    );
  });

  it('an_error_that_says_nothing_is_named_by_its_code_or_name_and_a_cycle_ends', () => {
    expect(errorReason(Object.assign(new Error(''), { code: 'ETIMEDOUT' }))).toBe('ETIMEDOUT');
    const named = new Error('');
    named.name = 'ErrorQUICClientCreateTimeout';
    expect(errorReason(named)).toBe('ErrorQUICClientCreateTimeout');
    expect(errorReason('plain words')).toBe('plain words');
    const a = new Error('a');
    const b = new Error('', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(errorReason(b)).toBe('a');
  });
});
