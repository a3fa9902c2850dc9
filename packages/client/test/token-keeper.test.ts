// Goal: a token provider's tokens are refreshed about two thirds into their lifetime (from the
// token's `iat`/`exp`, or the expiry the broker named in `reauth_ok`), a failing provider is
// reported and retried after a capped, jittered delay never shorter than the floor and stops
// after its attempt bound, the refresh timer never keeps a process alive, and a token's times are
// read from untrusted text with only the typed error. Method: a TokenKeeper on a pinned clock
// whose timers are fired by hand; fast-check over the JWT reader.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  ForbiddenError,
  InvalidTokenError,
  TokenProviderError,
  UnauthenticatedError,
  ackRefusalOf,
  brokerError,
} from '../src/errors.js';
import {
  TOKEN_BYTES_MAX,
  TOKEN_REFRESH_ATTEMPTS_MAX,
  TOKEN_REFRESH_DELAY_MS_MIN,
  TOKEN_REFRESH_RETRY_DELAY_MS_MAX,
} from '../src/limits.js';
import type { StatusEvent } from '../src/status.js';
import { tokenTimes } from '../src/token/claims.js';
import { type Presented, REAL_CLOCK, TokenKeeper } from '../src/token/keeper.js';
import { FakeClock, b64, jwt } from './fake-clock.js';

/** Resolves once the microtasks and I/O callbacks queued so far have run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function rig(provider: () => Promise<string>, present?: (t: string) => Promise<Presented>) {
  const clock = new FakeClock();
  const events: StatusEvent[] = [];
  const presented: string[] = [];
  const keeper = new TokenKeeper(
    provider,
    {
      present: async (t) => {
        presented.push(t);
        return present ? present(t) : { reauthenticated: true };
      },
      emit: (e) => events.push(e),
    },
    clock,
  );
  return { clock, events, presented, keeper };
}

describe('token keeper', () => {
  it('a_provided_token_is_refreshed_two_thirds_into_its_lifetime_and_presented', async () => {
    let calls = 0;
    let clockNow = () => 0;
    const provider = async () => {
      calls++;
      const iat = Math.floor(clockNow() / 1000);
      return jwt({ sub: 'p1', iat, exp: iat + 90 });
    };
    const { clock, events, presented, keeper } = rig(provider);
    clockNow = () => clock.now();
    const t0 = clock.now();
    await keeper.start();
    expect(calls).toBe(1);
    // Lifetime 90 s from iat: due at 60 s; the provider's timeout timer was cancelled.
    expect(clock.timers.map((t) => t.at)).toEqual([t0 + 60_000]);
    clock.fire();
    await settle();
    expect(calls).toBe(2);
    expect(presented).toEqual([keeper.current]);
    expect(events).toEqual([
      { type: 'token_refreshed', reauthenticated: true, expiresAtMs: t0 + 60_000 + 90_000 },
    ]);
    expect(clock.timers.map((t) => t.at)).toEqual([t0 + 120_000]);
    keeper.stop();
    expect(clock.timers).toEqual([]);
  });

  it('the_expiry_named_in_reauth_ok_schedules_the_next_refresh', async () => {
    let clockNow = () => 0;
    const provider = async () => jwt({ iat: Math.floor(clockNow() / 1000) }); // no `exp`
    const { clock, keeper } = rig(provider, async () => ({
      reauthenticated: true,
      expiresAtMs: clock.now() + 30_000,
    }));
    clockNow = () => clock.now();
    await keeper.start();
    // Without `exp` nothing is scheduled: the client cannot know when the token ends.
    expect(clock.timers).toEqual([]);
    await keeper.refresh();
    // The broker named an expiry 30 s on: due two thirds of the way, at 20 s.
    expect(clock.timers.map((t) => t.ms)).toEqual([20_000]);
    keeper.stop();
  });

  it('a_failing_token_provider_is_reported_and_retried_after_a_capped_delay_never_below_the_floor', async () => {
    let calls = 0;
    let failuresLeft = 6;
    let clockNow = () => 0;
    const provider = async () => {
      calls++;
      if (calls > 1 && failuresLeft-- > 0) throw new Error('idp down');
      const iat = Math.floor(clockNow() / 1000);
      return jwt({ iat, exp: iat + 600 });
    };
    const { clock, events, keeper } = rig(provider);
    clockNow = () => clock.now();
    await keeper.start();
    clock.random = () => 0; // the jitter's low end: the floor still holds
    clock.fire();
    await settle();
    clock.random = () => 0.999; // its high end: the cap holds
    for (let i = 0; i < 5; i++) {
      clock.fire();
      await settle();
    }
    const failed = events.filter((e) => e.type === 'token_refresh_failed');
    expect(failed.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const e of failed) {
      expect(e.error).toBeInstanceOf(TokenProviderError);
      expect(e.retryInMs).toBeGreaterThanOrEqual(TOKEN_REFRESH_DELAY_MS_MIN);
      expect(e.retryInMs).toBeLessThanOrEqual(TOKEN_REFRESH_RETRY_DELAY_MS_MAX);
    }
    expect(failed[0]!.retryInMs).toBe(TOKEN_REFRESH_DELAY_MS_MIN);
    expect(failed[5]!.retryInMs).toBe(Math.floor(0.999 * TOKEN_REFRESH_RETRY_DELAY_MS_MAX));
    // Exactly one timer armed at a time: never a tight loop.
    expect(clock.timers).toHaveLength(1);
    clock.fire();
    await settle();
    expect(events.at(-1)).toMatchObject({ type: 'token_refreshed' });
    expect(calls).toBe(8);
    keeper.stop();
  });

  it('a_token_provider_that_keeps_failing_stops_on_the_timer_after_its_attempt_bound', async () => {
    let calls = 0;
    const provider = async () => {
      if (calls++ === 0) return jwt({ iat: 1_700_000_000, exp: 1_700_000_060 });
      throw new Error('idp down');
    };
    const { clock, events, keeper } = rig(provider);
    await keeper.start();
    for (let i = 0; i < TOKEN_REFRESH_ATTEMPTS_MAX; i++) {
      clock.fire();
      await settle();
    }
    expect(calls).toBe(1 + TOKEN_REFRESH_ATTEMPTS_MAX);
    expect(clock.timers).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      type: 'token_refresh_failed',
      attempt: TOKEN_REFRESH_ATTEMPTS_MAX,
    });
    expect(events.at(-1)).not.toHaveProperty('retryInMs');
    // A reconnect still asks the provider (the token is marked stale).
    await expect(keeper.forConnect()).rejects.toBeInstanceOf(TokenProviderError);
    expect(calls).toBe(2 + TOKEN_REFRESH_ATTEMPTS_MAX);
  });

  it('a_token_provider_that_answers_no_string_or_never_answers_fails_with_a_typed_error', async () => {
    const empty = rig(async () => '');
    await expect(empty.keeper.start()).rejects.toBeInstanceOf(TokenProviderError);
    const silent = rig(() => new Promise<string>(() => undefined));
    const started = silent.keeper.start();
    await settle();
    silent.clock.fire(); // the provider's timeout
    await expect(started).rejects.toThrow(/no answer within/);
  });

  it('the_refresh_timer_does_not_keep_the_process_alive', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    try {
      const cancel = REAL_CLOCK.after(60_000, () => undefined);
      const timer = spy.mock.results[0]!.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      cancel();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('token claims', () => {
  it('token_times_are_read_from_a_jwt_in_milliseconds', () => {
    fc.assert(
      fc.property(fc.nat(4_000_000_000), fc.nat(100_000), (iat, life) => {
        const times = tokenTimes(jwt({ sub: 'x', iat, exp: iat + life, perms: ['a:b'] }));
        expect(times).toEqual({ issuedAtMs: iat * 1000, expiresAtMs: (iat + life) * 1000 });
      }),
    );
  });

  it('a_garbage_token_is_refused_with_only_the_typed_error', () => {
    const refusedOrRead = (token: string) => {
      try {
        tokenTimes(token);
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidTokenError);
      }
    };
    fc.assert(fc.property(fc.string(), refusedOrRead));
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (claims, sig) =>
        refusedOrRead(`${b64({})}.${b64(claims)}.${sig}`),
      ),
    );
    fc.assert(
      fc.property(fc.uint8Array(), (bytes) =>
        refusedOrRead(`e30.${Buffer.from(bytes).toString('base64url')}.c2ln`),
      ),
    );
    expect(() => tokenTimes('opaque-dev-token')).toThrow(InvalidTokenError);
    expect(() => tokenTimes(jwt({ exp: 'soon' }))).toThrow(/`exp` is not a date/);
    expect(() => tokenTimes(`e30.${'A'.repeat(TOKEN_BYTES_MAX)}.c2ln`)).toThrow(/longer than/);
  });
});

describe('authorization errors', () => {
  it('forbidden_and_unauthenticated_refusals_carry_action_and_object_and_are_fatal', () => {
    const detail = { action: 'stream.publish', object: 'stream:t1/default/orders' };
    const forbidden = brokerError({
      brokerCode: 'forbidden',
      message: 'no stream.publish',
      retry: 'retry', // a broker saying otherwise does not make it retryable
      detail,
    });
    expect(forbidden).toBeInstanceOf(ForbiddenError);
    expect(forbidden).toMatchObject({ code: 'FELIX_CLIENT_FORBIDDEN', retry: 'never', ...detail });
    const expired = brokerError({ brokerCode: 'unauthenticated', message: 'token expired' });
    expect(expired).toBeInstanceOf(UnauthenticatedError);
    expect(expired).toMatchObject({
      code: 'FELIX_CLIENT_UNAUTHENTICATED',
      retry: 'never',
      action: undefined,
      object: undefined,
    });
    // A refusal naming no detail leaves the fields absent; a binary publish ack (no detail) is
    // given the publish's own action and stream.
    expect(brokerError({ brokerCode: 'forbidden', message: '' })).toMatchObject({
      action: undefined,
      object: undefined,
    });
    expect(ackRefusalOf({ code: 2, message: 'no' }, 'stream:t1/default/orders')).toMatchObject({
      code: 'FELIX_CLIENT_FORBIDDEN',
      action: 'stream.publish',
      object: 'stream:t1/default/orders',
    });
    expect(ackRefusalOf({ code: 3, message: 'gone' }, 'stream:t1/default/x')).toMatchObject({
      brokerCode: 'not_found',
      detail: undefined,
    });
  });
});
