// Goal: a shard moved to its preferred broker at the control plane's request refuses its writes
// from the request on, says `drained` only once its target was level twice across a poll, asks
// for a report then, and takes writes again once it moved; one reported drained that did not
// move takes writes again only after the control plane accepted a report no longer saying so,
// and is not tried again for a while; a request of another generation, for a shard not shipped
// or whose groups hold claims or acks in memory is not taken; at most SHARD_TRANSFERS_MAX at once.
// Method: ShardTransfers over a fake replicator (ships, isLevel, shippingGeneration, the moving
// map) with fake timers.
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { shardKey } from '../src/cluster/feed-items.js';
import type { Replicator } from '../src/cluster/replicator.js';
import {
  ShardTransfers,
  type TransferDeps,
  type TransferRequest,
  movingRefusal,
} from '../src/cluster/transfers.js';
import {
  HANDOFF_POLL_MS,
  SHARD_TRANSFERS_MAX,
  SHARD_TRANSFER_MS,
  SHARD_TRANSFER_RETRY_MS,
} from '../src/limits.js';

const GENERATION = 4;

/** A replicator that ships `shipped` at GENERATION and says `to` level once `level` holds. */
function fakeReplicator(shipped: Set<string>, level: () => boolean) {
  return {
    moving: new Map<string, boolean>(),
    ships: (key: string) => shipped.has(key),
    shippingGeneration: (key: string) => (shipped.has(key) ? GENERATION : undefined),
    isLevel: (key: string, to: string) => shipped.has(key) && to === 'n2' && level(),
  } as unknown as Replicator;
}

const ask = (shard: number, generation = GENERATION): TransferRequest => ({
  tenant_id: 't1',
  namespace: 'ns',
  kind: 'stream',
  stream: 'orders',
  shard,
  generation,
  to: 'n2',
});
const keyOf = (shard: number) => shardKey('stream', 't1', 'ns', 'orders', shard);

/** `felix_broker_shard_transfers_total{outcome}` in `registry`. */
async function counted(registry: Registry, outcome: string): Promise<number> {
  const m = await registry.getSingleMetric('felix_broker_shard_transfers_total')?.get();
  return m?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

function transfersOver(rep: Replicator, deps: Partial<TransferDeps> = {}) {
  return new ShardTransfers({
    replicator: () => rep,
    busy: () => false,
    nudge: () => undefined,
    reported: async () => true,
    log: pino({ level: 'silent' }),
    ...deps,
  });
}

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
    const registry = new Registry();
    transfersOver(rep, { nudge: () => nudges++, registry }).request([ask(0)]);
    expect(movingRefusal(rep, keyOf(0), 'stream t1/ns/orders shard 0')?.wireCode).toBe('draining');
    expect(movingRefusal(rep, keyOf(1), 'stream t1/ns/orders shard 1')).toBeNull();
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 5);
    // Its target not level yet: its reports say nothing of a drain, and none was asked for.
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
    expect(await counted(registry, 'moved')).toBe(1);
  });

  it('a_shard_reported_drained_that_did_not_move_takes_writes_only_once_a_plain_report_was_accepted', async () => {
    // Before, it took writes again at its bound while the control plane still believed the
    // drained report and could move it on the next pass: acks answered meanwhile were lost.
    const shipped = new Set([keyOf(0)]);
    const rep = fakeReplicator(shipped, () => true);
    let accept: (ok: boolean) => void = () => undefined;
    const t = transfersOver(rep, {
      reported: () =>
        new Promise<boolean>((resolve) => {
          accept = resolve;
        }),
    });
    t.request([ask(0)]);
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS * 3);
    expect(rep.moving.get(keyOf(0))).toBe(true);
    // Not moved within its bound: its reports stop saying drained, and writes stay refused.
    await vi.advanceTimersByTimeAsync(SHARD_TRANSFER_MS + HANDOFF_POLL_MS);
    expect(rep.moving.get(keyOf(0))).toBe(false);
    expect(movingRefusal(rep, keyOf(0), 'x')).not.toBeNull();
    accept(true);
    await vi.advanceTimersByTimeAsync(HANDOFF_POLL_MS);
    expect(rep.moving.has(keyOf(0))).toBe(false);
    // Asked again at once, it rests: its writes are not paused at every report.
    t.request([ask(0)]);
    expect(rep.moving.has(keyOf(0))).toBe(false);
    await vi.advanceTimersByTimeAsync(SHARD_TRANSFER_RETRY_MS);
    t.request([ask(0)]);
    expect(rep.moving.has(keyOf(0))).toBe(true);
  });

  it('a_transfer_of_another_generation_or_a_shard_not_shipped_is_not_taken_and_a_few_move_at_once', async () => {
    const shipped = new Set(Array.from({ length: SHARD_TRANSFERS_MAX + 2 }, (_, i) => keyOf(i)));
    const rep = fakeReplicator(shipped, () => false);
    const registry = new Registry();
    const t = transfersOver(rep, { registry });
    t.request([ask(99), ask(0, GENERATION - 1)]);
    expect(rep.moving.size).toBe(0);
    t.request(Array.from({ length: SHARD_TRANSFERS_MAX + 2 }, (_, i) => ask(i)));
    expect(rep.moving.size).toBe(SHARD_TRANSFERS_MAX);
    expect(await counted(registry, 'refused')).toBe(2);
    // Never level: given up at its bound, writes taken again (nothing was reported drained).
    await vi.advanceTimersByTimeAsync(SHARD_TRANSFER_MS + HANDOFF_POLL_MS * 2);
    expect(rep.moving.size).toBe(0);
  });

  it('a_shard_whose_groups_hold_claims_or_acks_in_memory_is_not_moved', async () => {
    // A group's claims and its acks above an unfinished record live in its leader's memory: a
    // move would hand acked records out again (campaigns with a 3 s rebalance delay saw it).
    const shipped = new Set([keyOf(0), keyOf(1)]);
    const rep = fakeReplicator(shipped, () => true);
    let busy = true;
    let nudges = 0;
    const registry = new Registry();
    const t = transfersOver(rep, {
      busy: (r) => r.shard === 0 || busy,
      nudge: () => nudges++,
      registry,
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
    expect(await counted(registry, 'busy')).toBe(2);
  });
});
