// Goal: a shard moved to its preferred broker at the control plane's request refuses its writes
// from the request on, says `drained` only once its followers were level twice across a poll,
// asks for a report then, and takes writes again when it moved or when SHARD_TRANSFER_MS passed
// without a move; a broker moves at most SHARD_TRANSFERS_MAX shards at once.
// Method: ShardTransfers over a fake replicator (ships, isLevel, the moving map) with fake timers.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { shardKey } from '../src/cluster/feed-items.js';
import type { Replicator } from '../src/cluster/replicator.js';
import { ShardTransfers, type TransferRequest, movingRefusal } from '../src/cluster/transfers.js';
import { HANDOFF_POLL_MS, SHARD_TRANSFERS_MAX, SHARD_TRANSFER_MS } from '../src/limits.js';

/** A replicator that ships `shipped` and says each level once `level` holds. */
function fakeReplicator(shipped: Set<string>, level: () => boolean) {
  return {
    moving: new Map<string, boolean>(),
    ships: (key: string) => shipped.has(key),
    isLevel: (key: string) => shipped.has(key) && level(),
  } as unknown as Replicator;
}

const ask = (shard: number): TransferRequest => ({
  tenant_id: 't1',
  namespace: 'ns',
  kind: 'stream',
  stream: 'orders',
  shard,
  to: 'n2',
});
const keyOf = (shard: number) => shardKey('stream', 't1', 'ns', 'orders', shard);

describe('shard transfers', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a_moving_shard_refuses_writes_says_drained_only_once_level_twice_and_writes_again_once_moved', async () => {
    const shipped = new Set([keyOf(0)]);
    let level = false;
    const rep = fakeReplicator(shipped, () => level);
    let nudges = 0;
    const t = new ShardTransfers({
      replicator: () => rep,
      busy: () => false,
      nudge: () => nudges++,
      log: pino({ level: 'silent' }),
    });
    t.request([ask(0)]);
    expect(movingRefusal(rep, keyOf(0), 'stream t1/ns/orders shard 0')?.wireCode).toBe('draining');
    expect(movingRefusal(rep, keyOf(1), 'stream t1/ns/orders shard 1')).toBeNull();
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 5);
    // Not level yet: its reports say nothing of a drain, and no report was asked for.
    expect(rep.moving.get(keyOf(0))).toBe(false);
    expect(nudges).toBe(0);
    level = true;
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 3);
    expect(rep.moving.get(keyOf(0))).toBe(true);
    expect(nudges).toBe(1);
    // The control plane moved it: this broker no longer ships it, and the refusals end.
    shipped.delete(keyOf(0));
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 2);
    expect(rep.moving.has(keyOf(0))).toBe(false);
    expect(movingRefusal(rep, keyOf(0), 'x')).toBeNull();
  });

  it('a_shard_not_moved_within_its_bound_takes_writes_again_and_at_most_a_few_move_at_once', async () => {
    const shipped = new Set(Array.from({ length: SHARD_TRANSFERS_MAX + 2 }, (_, i) => keyOf(i)));
    const rep = fakeReplicator(shipped, () => true);
    const t = new ShardTransfers({
      replicator: () => rep,
      busy: () => false,
      nudge: () => undefined,
      log: pino({ level: 'silent' }),
    });
    t.request(Array.from({ length: SHARD_TRANSFERS_MAX + 2 }, (_, i) => ask(i)));
    expect(rep.moving.size).toBe(SHARD_TRANSFERS_MAX);
    // A shard this broker does not ship is never taken.
    t.request([ask(99)]);
    expect(rep.moving.has(keyOf(99))).toBe(false);
    await vi.advanceTimersByTimeAsync(SHARD_TRANSFER_MS + HANDOFF_POLL_MS * 2);
    expect(rep.moving.size).toBe(0);
    expect(movingRefusal(rep, keyOf(0), 'x')).toBeNull();
  });

  it('a_shard_whose_groups_hold_claims_or_acks_in_memory_is_not_moved', async () => {
    // A group's claims and its acks above an unfinished record live in its leader's memory: a
    // move would hand acked records out again (campaigns with a 3 s rebalance delay saw it).
    const shipped = new Set([keyOf(0), keyOf(1)]);
    const rep = fakeReplicator(shipped, () => true);
    let busy = true;
    let nudges = 0;
    const t = new ShardTransfers({
      replicator: () => rep,
      busy: (r) => r.shard === 0 || busy,
      nudge: () => nudges++,
      log: pino({ level: 'silent' }),
    });
    t.request([ask(0)]);
    expect(rep.moving.size).toBe(0);
    // Idle when asked, busy by the time it is level (a request admitted just before): given up.
    busy = false;
    t.request([ask(1)]);
    expect(rep.moving.has(keyOf(1))).toBe(true);
    busy = true;
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 4);
    expect(rep.moving.has(keyOf(1))).toBe(false);
    expect(nudges).toBe(0);
  });
});
