// Goal: a consume loop over every shard refuses a poll option the broker would refuse at the
// call, before anything is sent, as a one-shard loop does: packages/client/README.md, "`max`
// below 1, `visibilityMs` below 1 or a `waitMs` below 0 (or not whole) throws
// InvalidArgumentError at the call, before anything is sent".
// Found in a trial of queues: `felix.group(s, g, { shard: 'all' }).consume({ max: 0 })` returns a
// loop; its first `next()` looks the stream's shard count up (a request to the broker) and only
// then rejects, when it makes each shard's loop.
// Method: StreamGroup over real Group handles whose host never connects, and a shard lookup
// that counts its calls.
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../src/errors.js';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import { StreamGroup } from '../src/projections/stream-group.js';

describe('a consume loop over every shard and its options', () => {
  it('a_consume_loop_over_every_shard_refuses_a_bad_poll_option_at_the_call', () => {
    const host = {
      closed: false,
      connection: () => new Promise<never>(() => undefined),
    } as unknown as ProjectionHost;
    let lookups = 0;
    const group = new StreamGroup(
      'orders',
      'billing',
      async () => {
        lookups++;
        return 4;
      },
      (shard) => new Group(host, 'orders', 'billing', { shard }),
    );
    for (const bad of [{ max: 0 }, { waitMs: -1 }, { visibilityMs: 0 }, { max: 1.5 }]) {
      expect(() => group.consume(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
    expect(lookups).toBe(0);
  });
});
