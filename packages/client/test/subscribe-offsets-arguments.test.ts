// Goal: a `{ offsets }` start the client cannot read is refused at the call with a message that
// says why: a Map (read as naming no shard, then every shard took the fallback), a string
// offset (shown quoted, not as the number it looks like), keys that are no shard numbers.
// Found by a new-user trial. Method: the argument check the client runs before it subscribes.
import { describe, expect, it } from 'vitest';
import { checkSubscribeOptions } from '../src/arguments.js';
import { InvalidArgumentError } from '../src/errors.js';

const refused = (from: unknown) => {
  try {
    checkSubscribeOptions({ from: from as never });
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as Error).message;
  }
  return undefined;
};

describe('subscribe offsets arguments', () => {
  it('an_offsets_start_the_client_cannot_read_is_refused_saying_why', () => {
    expect(refused({ offsets: new Map([[0, 5]]), otherwise: 'latest' })).toMatch(/plain object/);
    expect(refused({ offsets: { 0: '5' } })).toMatch(/got "5"/);
    expect(refused({ offsets: { 0: 5n } })).toMatch(/got 5n/);
    expect(refused({ offsets: { '01': 5 } })).toMatch(/01 is no shard number/);
    expect(refused({ offsets: { 0: 5 }, otherwise: 'first' })).toMatch(/otherwise/);
    // What positions() answers, and what JSON gives back, and an array by shard: accepted.
    expect(refused({ offsets: { 0: 5, 1: 0 } })).toBeUndefined();
    expect(refused({ offsets: JSON.parse('{"0":5,"1":0}') })).toBeUndefined();
    expect(refused({ offsets: [5, 0] })).toBeUndefined();
  });
});
