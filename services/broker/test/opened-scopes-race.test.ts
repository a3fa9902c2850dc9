// Found by a review: openLongLived (ee130714) remembers a subscribe's scope at admission and forgets it
// when the handler refuses. Two subscribes of one scope pipelined on one stream share the entry
// (the second finds it there and adds none): the first refused removes it while the second opens,
// so a narrower token's recheck no longer sees the open subscription.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { REQUEST_ACCESS } from '../src/session/access.js';
import { type OpenedScope, openLongLived } from '../src/session/opened-scopes.js';
import type { Outcome } from '../src/session/handler.js';
import { Refusal } from '../src/session/refusal.js';

describe('opened scopes under pipelined subscribes', () => {
  it('a_refused_subscribe_does_not_forget_the_scope_of_one_of_the_same_scope_that_opened', async () => {
    const access = REQUEST_ACCESS.subscribe as Exclude<
      (typeof REQUEST_ACCESS)['subscribe'],
      'open'
    >;
    const opened: OpenedScope[] = [];
    const base = { type: 'subscribe', tenant_id: 't1', namespace: 'default', stream: 'orders' };
    let refuseA!: (o: Outcome) => void;
    let openB!: (o: Outcome) => void;
    const a = openLongLived(
      opened,
      access,
      { ...base, shard: 99 } as unknown as Message,
      () =>
        new Promise<Outcome>((r) => {
          refuseA = r;
        }),
    );
    const b = openLongLived(
      opened,
      access,
      { ...base, shard: 0 } as unknown as Message,
      () =>
        new Promise<Outcome>((r) => {
          openB = r;
        }),
    );
    // A: shard out of range (refused); B: opens (its subscription now delivers).
    refuseA(new Refusal('invalid_request', 'shard 99 out of range', 'shard_out_of_range'));
    openB(null);
    expect(await a).toBeInstanceOf(Refusal);
    expect(await b).toBeNull();
    // B's subscription is open: its scope must still be checked at the next token.
    expect(opened.map((o) => (o.msg as unknown as { stream: string }).stream)).toEqual(['orders']);
  });
});
