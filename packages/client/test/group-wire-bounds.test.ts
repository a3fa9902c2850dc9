// Goal: a group call given input the wire cannot carry is refused with the client's own
// InvalidArgumentError, before anything is sent: packages/client/README.md, "Errors": "Every
// failure is a typed error extending `ClientError` ... Input the wire cannot carry ... is refused
// alone with `InvalidArgumentError`, before anything is sent".
// Found in a trial of queues: `seek({ offset: -1 })`, `redrive(1.5)`, `discard(NaN)` and
// `poll({ max: 2 ** 32 })` (a `max` the README says the broker caps at 1,000) reject with the
// wire's FieldRangeError ("group_seek.start must be an integer in [0, ...]", "max_records must be
// a u32"), which is no ClientError and which @felix/client does not export; in a consume() loop
// such an error is untyped, so it ends the loop.
// Method: a Group over the fake broker connection of group-consume-rig.ts (the client's real
// request lane and poll streams over recording fake streams).
import { describe, expect, it } from 'vitest';
import { ClientError, InvalidArgumentError } from '../src/errors.js';
import { Group } from '../src/projections/group.js';
import { fakeHost } from './group-consume-rig.js';

describe('group calls and what the wire cannot carry', () => {
  it('a_group_call_the_wire_cannot_carry_is_refused_with_invalid_argument_error', async () => {
    const { host } = fakeHost();
    // A broker offering every group feature (admin calls and dead letters included).
    const bc = (await host.connection()) as { negotiated: { features: number } };
    bc.negotiated.features = 0xffff_ffff;
    const g = new Group(host as never, 'jobs', 'billing');
    const calls: Record<string, () => Promise<unknown>> = {
      'seek({ offset: -1 })': () => g.seek({ offset: -1 }),
      'seek({ offset: 1.5 })': () => g.seek({ offset: 1.5 }),
      'redrive(-1)': () => g.redrive(-1),
      'redrive(1.5)': () => g.redrive(1.5),
      'discard(NaN)': () => g.discard(Number.NaN),
      'poll({ max: 2 ** 32 })': () => g.poll({ max: 2 ** 32, waitMs: 0 }),
    };
    for (const [what, call] of Object.entries(calls)) {
      const err = await Promise.resolve()
        .then(call)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err, what).toBeInstanceOf(ClientError);
      expect(err, what).toBeInstanceOf(InvalidArgumentError);
    }
  });
});
