// A small model of a correct single broker, driven by generated commands, that writes the
// history a recorder would: publishers with unknown outcomes and resends, subscribers that
// resubscribe and are told of trimmed ranges, a cache, a counter and a consumer group with
// lapsing claims, nacks and faults. Every history it writes must check valid.
import fc from 'fast-check';
import { History, type Pending } from './builder.js';

export const MODEL_VISIBILITY_MS = 50;
export const MODEL_ATTEMPTS_MAX = 2;
const SHARDS = 2;
const KEYS = ['k0', 'k1'];

type Outcome = 'ok' | 'infoApplied' | 'infoLost' | 'fail';
const outcomeArb = fc.constantFrom<Outcome>('ok', 'ok', 'infoApplied', 'infoLost', 'fail');
const who = fc.nat(1);

export type Command =
  | { kind: 'publish'; pub: number; shard: number; outcome: Outcome; resend: boolean }
  | { kind: 'read'; sub: number; steps: number }
  | { kind: 'resubscribe'; sub: number }
  | { kind: 'trim'; shard: number; count: number }
  | { kind: 'put'; key: number; outcome: Outcome }
  | { kind: 'get'; key: number }
  | { kind: 'add'; key: number; delta: number; outcome: Outcome }
  | { kind: 'poll'; consumer: number; shard: number }
  | { kind: 'ack'; consumer: number; pick: number; outcome: Outcome }
  | { kind: 'nack'; consumer: number; pick: number }
  | { kind: 'wait'; ms: number }
  | { kind: 'fault'; fault: 'kill' | 'pause' | 'partition' };

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('publish' as const),
    pub: who,
    shard: fc.nat(SHARDS - 1),
    outcome: outcomeArb,
    resend: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('read' as const),
    sub: who,
    steps: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ kind: fc.constant('resubscribe' as const), sub: who }),
  fc.record({
    kind: fc.constant('trim' as const),
    shard: fc.nat(SHARDS - 1),
    count: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({
    kind: fc.constant('put' as const),
    key: fc.nat(KEYS.length - 1),
    outcome: outcomeArb,
  }),
  fc.record({ kind: fc.constant('get' as const), key: fc.nat(KEYS.length - 1) }),
  fc.record({
    kind: fc.constant('add' as const),
    key: fc.nat(KEYS.length - 1),
    delta: fc.integer({ min: -3, max: 5 }),
    outcome: outcomeArb,
  }),
  fc.record({ kind: fc.constant('poll' as const), consumer: who, shard: fc.nat(SHARDS - 1) }),
  fc.record({
    kind: fc.constant('ack' as const),
    consumer: who,
    pick: fc.nat(3),
    outcome: outcomeArb,
  }),
  fc.record({ kind: fc.constant('nack' as const), consumer: who, pick: fc.nat(3) }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 120 }) }),
  fc.record({
    kind: fc.constant('fault' as const),
    fault: fc.constantFrom('kill' as const, 'pause' as const, 'partition' as const),
  }),
);

interface GroupRecord {
  acked: boolean;
  dead: boolean;
  attempts: number;
  holder: string | undefined;
  /** Invoke time of the poll that handed it to its holder. */
  claimedAt: number;
  /** Consumers that were handed it and did not give it back. */
  holders: Set<string>;
}

interface Reader {
  shard: number;
  next: number;
  sub: Pending | undefined;
}

export class Model {
  readonly h = new History({
    streams: [{ name: 's', shards: SHARDS, durable: true }],
    groups: [
      {
        stream: 's',
        group: 'g',
        visibilityMs: MODEL_VISIBILITY_MS,
        cursor: 'onCommit',
        attemptsMax: MODEL_ATTEMPTS_MAX,
      },
    ],
    caches: ['c'],
    counters: ['n'],
  });
  private readonly logs: string[][] = Array.from({ length: SHARDS }, () => []);
  private readonly starts: number[] = Array.from({ length: SHARDS }, () => 0);
  private readonly readers: Reader[] = [0, 1].map((i) => ({
    shard: i % SHARDS,
    next: 0,
    sub: undefined,
  }));
  private readonly cache = new Map<string, string>();
  private readonly counter = new Map<string, number>();
  private readonly group: Map<number, GroupRecord>[] = Array.from(
    { length: SHARDS },
    () => new Map(),
  );
  private values = 0;

  run(commands: Command[], stopped: boolean): History {
    for (const c of commands) this.step(c);
    if (stopped) {
      const value = this.nextValue();
      this.h.publish('pub-0', 's', value);
      if (this.values % 2 === 0) this.logs[0]?.push(value);
    }
    this.finish();
    return this.h;
  }

  private nextValue(): string {
    this.values += 1;
    return `v${this.values}`;
  }

  private step(c: Command): void {
    switch (c.kind) {
      case 'publish':
        this.publish(c.pub, c.shard, c.outcome, c.resend);
        return;
      case 'read':
        this.read(c.sub, c.steps);
        return;
      case 'resubscribe':
        (this.readers[c.sub] as Reader).sub = undefined;
        return;
      case 'trim': {
        const log = this.logs[c.shard] as string[];
        this.starts[c.shard] = Math.min(log.length, (this.starts[c.shard] ?? 0) + c.count);
        return;
      }
      case 'put':
        this.put(c.key, c.outcome);
        return;
      case 'get': {
        const key = KEYS[c.key] as string;
        this.h.cacheGet('cache-1', 'c', key).ok({ value: this.cache.get(key) ?? null });
        return;
      }
      case 'add':
        this.add(c.key, c.delta, c.outcome);
        return;
      case 'poll':
        this.poll(`group-${c.consumer}`, c.shard, 2);
        return;
      case 'ack':
        this.settle(c.consumer, c.pick, c.outcome);
        return;
      case 'nack':
        this.settle(c.consumer, c.pick, 'nack');
        return;
      case 'wait':
        this.h.at(this.h.clock() + c.ms);
        return;
      case 'fault':
        this.fault(c.fault);
        return;
    }
  }

  private complete(p: Pending, outcome: Outcome, ok: Record<string, unknown> = {}): boolean {
    if (outcome === 'ok') p.ok(ok);
    else if (outcome === 'fail') p.fail();
    else p.info();
    return outcome === 'ok' || outcome === 'infoApplied';
  }

  private publish(pub: number, shard: number, outcome: Outcome, resend: boolean) {
    const value = this.nextValue();
    const log = this.logs[shard] as string[];
    const first = this.h.publish(`pub-${pub}`, 's', value).pending;
    if (outcome === 'ok' || outcome === 'infoApplied') log.push(value);
    this.complete(first, outcome, { shard, offset: log.length - 1 });
    if (!resend || outcome === 'ok') return;
    this.h.publish(`pub-${pub}`, 's', value, 2).ok(shard, log.length);
    log.push(value);
  }

  private read(index: number, steps: number) {
    const reader = this.readers[index] as Reader;
    const process = `sub-${index}`;
    if (reader.sub === undefined)
      reader.sub = this.h.subscribe(process, 's', reader.shard, reader.next);
    const log = this.logs[reader.shard] as string[];
    const start = this.starts[reader.shard] ?? 0;
    if (reader.next < start) {
      this.h.gap(reader.sub, process, 's', reader.shard, reader.next, start);
      reader.next = start;
    }
    for (let i = 0; i < steps && reader.next < log.length; i++) {
      this.h.deliver(
        reader.sub,
        process,
        's',
        reader.shard,
        reader.next,
        log[reader.next] as string,
      );
      reader.next += 1;
    }
  }

  private put(keyIndex: number, outcome: Outcome) {
    const key = KEYS[keyIndex] as string;
    const value = this.nextValue();
    if (this.complete(this.h.cachePut('cache-0', 'c', key, value), outcome))
      this.cache.set(key, value);
  }

  private add(keyIndex: number, delta: number, outcome: Outcome) {
    const key = KEYS[keyIndex] as string;
    if (this.complete(this.h.counterAdd('counter-0', 'n', key, delta), outcome)) {
      this.counter.set(key, (this.counter.get(key) ?? 0) + delta);
    }
  }

  /** Hands out up to `max` records nobody holds (or whose claim lapsed); returns their offsets. */
  private poll(consumer: string, shard: number, max: number): number[] {
    const log = this.logs[shard] as string[];
    const records = this.group[shard] as Map<number, GroupRecord>;
    const invokeAt = this.h.clock() + 1;
    const handed: { offset: number; value: string; attempt: number }[] = [];
    for (let o = this.starts[shard] ?? 0; o < log.length && handed.length < max; o++) {
      let r = records.get(o);
      if (r === undefined) {
        r = {
          acked: false,
          dead: false,
          attempts: 0,
          holder: undefined,
          claimedAt: 0,
          holders: new Set(),
        };
        records.set(o, r);
      }
      if (r.acked || r.dead) continue;
      if (r.holder !== undefined && invokeAt + 1 < r.claimedAt + MODEL_VISIBILITY_MS) continue;
      if (r.attempts >= MODEL_ATTEMPTS_MAX) {
        r.dead = true;
        continue;
      }
      r.attempts += 1;
      r.holder = consumer;
      r.claimedAt = invokeAt;
      r.holders.add(consumer);
      handed.push({ offset: o, value: log[o] as string, attempt: r.attempts });
    }
    this.h.poll(consumer, 's', 'g', shard, handed);
    return handed.map((r) => r.offset);
  }

  private settle(consumer: number, pick: number, outcome: Outcome | 'nack') {
    const name = `group-${consumer}`;
    const held: [number, number, GroupRecord][] = [];
    this.group.forEach((records, shard) => {
      for (const [offset, r] of records) if (r.holders.has(name)) held.push([shard, offset, r]);
    });
    const chosen = held[pick % Math.max(1, held.length)];
    if (chosen === undefined) return;
    const [shard, offset, r] = chosen;
    if (outcome === 'nack') {
      this.h.nack(name, 's', 'g', shard, offset).ok();
      r.holders.delete(name);
      if (r.holder === name) r.holder = undefined;
      return;
    }
    if (this.complete(this.h.ack(name, 's', 'g', shard, offset), outcome)) r.acked = true;
  }

  private fault(fault: 'kill' | 'pause' | 'partition') {
    const heal = { kill: 'restart', pause: 'resume', partition: 'heal' }[fault];
    this.h.nemesis(fault, 'broker-0');
    this.h.at(this.h.clock() + 5);
    this.h.nemesis(heal, 'broker-0');
    for (const reader of this.readers) reader.sub = undefined;
    for (const records of this.group) for (const r of records.values()) r.holder = undefined;
  }

  /** After the faults: drain the group, then read every shard, cache key and counter key. */
  private finish() {
    for (let shard = 0; shard < SHARDS; shard++) {
      this.h.at(this.h.clock() + MODEL_VISIBILITY_MS + 1);
      for (const offset of this.poll('group-final', shard, Number.POSITIVE_INFINITY)) {
        this.h.ack('group-final', 's', 'g', shard, offset).ok();
        (this.group[shard]?.get(offset) as GroupRecord).acked = true;
      }
      const records = this.group[shard] as Map<number, GroupRecord>;
      const dead = [...records].filter(([, r]) => r.dead).map(([o]) => o);
      const log = this.logs[shard] as string[];
      const start = this.starts[shard] ?? 0;
      this.h.finalRead('s', shard, start, log.slice(start));
      this.h.groupFinal('s', 'g', shard, log.length, dead);
    }
    for (const key of KEYS) {
      this.h.cacheFinal('c', key, this.cache.get(key) ?? null);
      this.h.counterFinal('n', key, this.counter.get(key) ?? 0);
    }
  }
}
