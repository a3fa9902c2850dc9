// Goal: a group ack refused unapplied (draining, not_leader) is sent again on the shard's owner as
// the router then knows it, the router told of each refusal and a `not_leader` followed away from
// the broker that gave it; an outcome unknown, a stale claim, a closed client or a route turned
// off ends it with the refusal at once.
// Method: settleAgain over a fake route that records its calls and answers from a script.
import { describe, expect, it } from 'vitest';
import {
  type BrokerAnswer,
  DrainingError,
  OutcomeUnknownError,
  StaleClaimError,
  notLeaderOf,
} from '../src/errors.js';
import type { ProjectionRoute } from '../src/projections/host.js';
import { type SettleShard, settleAgain } from '../src/projections/settle-again.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

const draining = () =>
  new DrainingError({ brokerCode: 'draining', message: 'shard moving' } as BrokerAnswer);

/** A route whose `request` answers each call from `script` in turn (an error throws). */
function routeOf(script: Array<unknown>) {
  const refused: string[] = [];
  const tried: Array<readonly string[] | undefined> = [];
  const route = {
    active: true,
    requestTimeoutMs: 5_000,
    connectionFor: () => Promise.reject(new Error('unused')),
    widthOf: async () => 1,
    refused: (_k: string, _n: string, _s: number, err: unknown, from: string) => {
      refused.push(`${(err as { code?: string }).code} from ${from}`);
    },
    request: async <T>(
      _k: string,
      _n: string,
      _s: number,
      call: (bc: BrokerConnection) => Promise<T>,
      _signal?: AbortSignal,
      t?: readonly string[],
    ) => {
      tried.push(t);
      const next = script.shift();
      // Broker b answers: with the scripted refusal, or as the call does.
      const answered = await call({ server: 'quic://b:1' } as BrokerConnection);
      if (next instanceof Error) throw next;
      return answered;
    },
  } as unknown as ProjectionRoute;
  return { route, refused, tried };
}

const shardOn = (route: ProjectionRoute, closed = false): SettleShard => ({
  route,
  stream: 'jobs',
  shard: 0,
  closed: () => closed,
  closing: undefined,
});

describe('settle again', () => {
  it('an_ack_refused_unapplied_is_sent_again_on_the_owner_until_it_is_applied', async () => {
    const { route, refused, tried } = routeOf([draining(), 'ok']);
    const first = { err: draining(), from: 'quic://a:1' };
    const applied = await settleAgain(shardOn(route), async () => 'acked', first);
    expect(applied).toBe('acked');
    expect(refused).toEqual([
      'FELIX_CLIENT_DRAINING from quic://a:1',
      'FELIX_CLIENT_DRAINING from quic://b:1',
    ]);
    // A `not_leader` from a broker just asked is followed at once, never back to it.
    const redirected = routeOf(['ok']);
    const notLeader = notLeaderOf({ node_id: 'n2', addr: 'b:1', generation: 3 });
    await settleAgain(shardOn(redirected.route), async () => 'acked', {
      err: notLeader,
      from: 'quic://a:1',
    });
    expect(redirected.tried).toEqual([['quic://a:1']]);
    expect(tried[0]).toEqual([]);
  });

  it('an_ack_of_unknown_outcome_or_stale_claim_or_on_a_closed_client_is_not_sent_again', async () => {
    for (const [err, closed] of [
      [new OutcomeUnknownError('group g'), false],
      [new StaleClaimError({ brokerCode: 'stale_claim', message: 'gone' } as BrokerAnswer), false],
      [draining(), true],
    ] as const) {
      const { route, tried } = routeOf(['ok']);
      const out = await settleAgain(shardOn(route, closed), async () => 'acked', {
        err,
        from: 'quic://a:1',
      }).catch((e: unknown) => e);
      expect(out).toBe(err);
      expect(tried).toEqual([]);
    }
    // A route turned off (a broker without discovery): the refusal stands.
    const off = routeOf(['ok']);
    (off.route as { active: boolean }).active = false;
    const err = draining();
    expect(
      await settleAgain(shardOn(off.route), async () => 'acked', { err, from: '' }).catch(
        (e: unknown) => e,
      ),
    ).toBe(err);
  });
});
