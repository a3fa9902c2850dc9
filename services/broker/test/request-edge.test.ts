// Goal: the pieces of the broker's request edge that no end-to-end test isolates: refusal codes
// are rows of @felix/wire's error-code table (numbers and retry classes are wire's), a request
// type has one handler and a row in the permission table, and a wake reaches only the group polls
// waiting on that shard, and is not lost by a poll that was about to sleep.
// Method: compare against wire's table; register twice; park polls on two sources and wake one;
// wake a source between a poll's mark and its sleep.
import {
  ERROR_CODES,
  ERROR_CODE_NUMBERS,
  FEATURE_HI_REAUTH,
  RETRY_BYTES,
  defaultRetryFor,
} from '@felix/wire';
import { withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import type { RecordSource } from '../src/groups/record-source.js';
import { PollWaiters } from '../src/groups/waiters.js';
import { HandlerTable } from '../src/session/handler.js';
import { Refusal } from '../src/session/refusal.js';

describe('request edge', () => {
  it('every_refusal_code_is_a_row_of_the_wire_table', () => {
    for (const row of ERROR_CODES) {
      const refusal = new Refusal(row.name, 'm', 'r');
      expect(ERROR_CODE_NUMBERS[refusal.wireCode]).toBe(row.code);
      expect(refusal.wireRetry).toBe(defaultRetryFor(row.name));
      expect(RETRY_BYTES[refusal.wireRetry]).toBe(row.retry);
    }
    expect(new Refusal('stale_claim', 'm', 'r', { retry: 'fatal' }).wireRetry).toBe('fatal');
  });

  it('a_request_type_has_one_handler', () => {
    const table = new HandlerTable();
    const handler = { onPublishOnly: 'unsupported', shardLocation: 'message', handle: () => null };
    table.register('cache_put', handler as never);
    expect(() => table.register('cache_put', handler as never)).toThrow(/twice/);
    // The session's own `auth` is registered by the table itself.
    expect(table.handler('auth')).toBeDefined();
  });

  it('a_request_type_without_a_permission_row_cannot_be_registered', () => {
    const table = new HandlerTable();
    const handler = { onPublishOnly: 'unsupported', shardLocation: 'message', handle: () => null };
    expect(() => table.register('producer_init' as never, handler as never)).toThrow(
      /permission table/,
    );
    // Every served type has its row: the table itself registers `reauth`, and offers it.
    expect(table.entry('reauth')?.access).toBeNull();
    expect(table.featuresHi & FEATURE_HI_REAUTH).toBe(FEATURE_HI_REAUTH);
    table.register('cache_put', handler as never);
    expect(table.entry('cache_put')?.access).toMatchObject({ action: 'cache.write' });
  });

  it('a_wake_reaches_only_the_polls_waiting_on_that_shard', async () => {
    const waiters = new PollWaiters();
    const a = {} as RecordSource;
    const b = {} as RecordSource;
    let bWoke = false;
    const onA = waiters.sleep(a, 60_000, waiters.mark());
    const onB = waiters.sleep(b, 60_000, waiters.mark()).then(() => {
      bWoke = true;
    });
    waiters.wake(a);
    await onA;
    expect(bWoke).toBe(false);
    expect(waiters.size).toBe(1);
    waiters.wakeAll();
    await onB;
    expect(bWoke).toBe(true);
    expect(waiters.size).toBe(0);
  });

  it('a_poll_woken_after_its_mark_and_before_its_sleep_does_not_sleep', async () => {
    const waiters = new PollWaiters();
    const a = {} as RecordSource;
    const b = {} as RecordSource;
    // The poll marks, its hand-out finds nothing, a publish wakes the shard, then it sleeps.
    const beforeWake = waiters.mark();
    waiters.wake(a);
    await withDeadline(waiters.sleep(a, 60_000, beforeWake), 5_000, 'the woken poll');
    // A wake of another shard, or one before the mark, leaves the sleep waiting.
    const afterWake = waiters.mark();
    waiters.wake(b);
    let slept = false;
    const waiting = waiters.sleep(a, 60_000, afterWake).then(() => {
      slept = true;
    });
    await new Promise((r) => setImmediate(r)); // lets a resolved sleep's callback run
    expect(slept).toBe(false);
    // A drain between the mark and the sleep is not lost either.
    const beforeDrain = waiters.mark();
    waiters.wakeAll();
    await waiting;
    await withDeadline(waiters.sleep(b, 60_000, beforeDrain), 5_000, 'the drained poll');
    expect(waiters.size).toBe(0);
  });
});
