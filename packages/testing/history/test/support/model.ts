// A small model of a correct single broker, driven by generated commands, that writes the
// history a recorder would: publishers with unknown outcomes and resends, subscribers that
// resubscribe and are told of trimmed or dropped ranges (a durable and an in-memory stream), a
// cache with reads racing writes, a counter, and two consumer groups (onCommit and periodic
// cursors) with lapsing claims, nacks, dead letters and faults. Every history it writes must
// check valid.
import fc from 'fast-check';
import { History, type Pending } from './builder.js';

export const MODEL_VISIBILITY_MS = 50;
export const MODEL_ATTEMPTS_MAX = 2;
const SHARDS = 2;
const KEYS = ['k0', 'k1'];
const GROUPS = [
  { group: 'g', cursor: 'onCommit' as const },
  { group: 'gp', cursor: 'periodic' as const },
];
/** Where each publisher target and each reader points: two durable shards, one in-memory. */
const PLACES = [
  { stream: 's', shard: 0 },
  { stream: 's', shard: 1 },
  { stream: 'm', shard: 0 },
];

type Outcome = 'ok' | 'infoApplied' | 'infoLost' | 'fail';
const outcomeArb = fc.constantFrom<Outcome>('ok', 'ok', 'infoApplied', 'infoLost', 'fail');
const two = fc.nat(1);
const place = fc.nat(PLACES.length - 1);
const key = fc.nat(KEYS.length - 1);

export type Command =
  | { kind: 'publish'; pub: number; place: number; outcome: Outcome; resend: boolean }
  | { kind: 'read'; sub: number; steps: number }
  | { kind: 'resubscribe'; sub: number }
  | { kind: 'drop'; sub: number; count: number }
  | { kind: 'trim'; shard: number; count: number }
  | { kind: 'put'; key: number; outcome: Outcome }
  | { kind: 'racePut'; key: number; outcome: Outcome; seen: boolean }
  | { kind: 'get'; key: number }
  | { kind: 'add'; key: number; delta: number; outcome: Outcome }
  | { kind: 'poll'; group: number; consumer: number; shard: number }
  | { kind: 'ack'; group: number; consumer: number; pick: number; outcome: Outcome }
  | { kind: 'nack'; group: number; consumer: number; pick: number }
  | { kind: 'wait'; ms: number }
  | { kind: 'fault'; fault: 'kill' | 'pause' | 'partition' };

const k = <K extends Command['kind']>(kind: K) => fc.constant(kind);

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ kind: k('publish'), pub: two, place, outcome: outcomeArb, resend: fc.boolean() }),
  fc.record({ kind: k('read'), sub: place, steps: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: k('resubscribe'), sub: place }),
  fc.record({ kind: k('drop'), sub: place, count: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: k('trim'), shard: fc.nat(SHARDS - 1), count: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: k('put'), key, outcome: outcomeArb }),
  fc.record({ kind: k('racePut'), key, outcome: outcomeArb, seen: fc.boolean() }),
  fc.record({ kind: k('get'), key }),
  fc.record({ kind: k('add'), key, delta: fc.integer({ min: -3, max: 5 }), outcome: outcomeArb }),
  fc.record({ kind: k('poll'), group: two, consumer: two, shard: fc.nat(SHARDS - 1) }),
  fc.record({ kind: k('ack'), group: two, consumer: two, pick: fc.nat(3), outcome: outcomeArb }),
  fc.record({ kind: k('nack'), group: two, consumer: two, pick: fc.nat(3) }),
  fc.record({ kind: k('wait'), ms: fc.integer({ min: 1, max: 120 }) }),
  fc.record({
    kind: k('fault'),
    fault: fc.constantFrom('kill' as const, 'pause' as const, 'partition' as const),
  }),
);

/** Which processes stopped with a request open at the end, and whether each was applied. */
export interface Stops {
  publish: boolean;
  put: boolean;
  add: boolean;
  applied: boolean;
}

export const stopsArb: fc.Arbitrary<Stops> = fc.record({
  publish: fc.boolean(),
  put: fc.boolean(),
  add: fc.boolean(),
  applied: fc.boolean(),
});

interface GroupRecord {
  acked: boolean;
  /** A periodic cursor's ack not yet flushed: a kill forgets it. */
  ackVolatile: boolean;
  dead: boolean;
  attempts: number;
  holder: string | undefined;
  /** Invoke time of the poll that handed it to its holder. */
  claimedAt: number;
  /** Consumers that were handed it and did not give it back. */
  holders: Set<string>;
}

interface Reader {
  stream: string;
  shard: number;
  next: number;
  sub: Pending | undefined;
}

export class Model {
  readonly h = new History({
    streams: [
      { name: 's', shards: SHARDS, durable: true },
      { name: 'm', shards: 1, durable: false },
    ],
    groups: GROUPS.map((g) => ({
      stream: 's',
      ...g,
      visibilityMs: MODEL_VISIBILITY_MS,
      attemptsMax: MODEL_ATTEMPTS_MAX,
    })),
    caches: ['c'],
    counters: ['n'],
  });
  private readonly logs = new Map(PLACES.map((p) => [`${p.stream}/${p.shard}`, [] as string[]]));
  private readonly starts = new Map(PLACES.map((p) => [`${p.stream}/${p.shard}`, 0]));
  private readonly readers: Reader[] = PLACES.map((p) => ({ ...p, next: 0, sub: undefined }));
  private readonly cache = new Map<string, string>();
  private readonly counter = new Map<string, number>();
  /** Group records per group index, then `shard/offset`. */
  private readonly groups = GROUPS.map(() => new Map<string, GroupRecord>());
  private values = 0;

  run(commands: Command[], stops: Stops): History {
    for (const c of commands) this.step(c);
    this.stop(stops);
    this.finish();
    return this.h;
  }

  private log(stream: string, shard: number): string[] {
    return this.logs.get(`${stream}/${shard}`) as string[];
  }

  private start(stream: string, shard: number): number {
    return this.starts.get(`${stream}/${shard}`) ?? 0;
  }

  private nextValue(): string {
    this.values += 1;
    return `v${this.values}`;
  }

  private step(c: Command): void {
    const steps: { [K in Command['kind']]: (c: Extract<Command, { kind: K }>) => void } = {
      publish: (c) => this.publish(c.pub, c.place, c.outcome, c.resend),
      read: (c) => this.read(c.sub, c.steps),
      resubscribe: (c) => {
        (this.readers[c.sub] as Reader).sub = undefined;
      },
      drop: (c) => this.drop(c.sub, c.count),
      trim: (c) => {
        const length = this.log('s', c.shard).length;
        this.starts.set(`s/${c.shard}`, Math.min(length, this.start('s', c.shard) + c.count));
      },
      put: (c) => this.put(c.key, c.outcome, undefined),
      racePut: (c) => this.put(c.key, c.outcome, c.seen),
      get: (c) => this.get(c.key),
      add: (c) => this.add(c.key, c.delta, c.outcome),
      poll: (c) => {
        this.poll(c.group, `group-${c.consumer}`, c.shard, 2);
      },
      ack: (c) => this.settle(c.group, c.consumer, c.pick, c.outcome),
      nack: (c) => this.settle(c.group, c.consumer, c.pick, 'nack'),
      wait: (c) => {
        this.h.at(this.h.clock() + c.ms);
        this.flushCursors();
      },
      fault: (c) => this.fault(c.fault),
    };
    (steps[c.kind] as (c: Command) => void)(c);
  }

  private complete(p: Pending, outcome: Outcome, ok: Record<string, unknown> = {}): boolean {
    if (outcome === 'ok') p.ok(ok);
    else if (outcome === 'fail') p.fail();
    else p.info();
    return outcome === 'ok' || outcome === 'infoApplied';
  }

  private publish(pub: number, at: number, outcome: Outcome, resend: boolean) {
    const { stream, shard } = PLACES[at] as (typeof PLACES)[number];
    const value = this.nextValue();
    const log = this.log(stream, shard);
    const first = this.h.publish(`pub-${pub}`, stream, value).pending;
    if (outcome === 'ok' || outcome === 'infoApplied') log.push(value);
    this.complete(first, outcome, { shard, offset: log.length - 1 });
    if (!resend || outcome === 'ok') return;
    this.h.publish(`pub-${pub}`, stream, value, 2).ok(shard, log.length);
    log.push(value);
  }

  private read(index: number, steps: number) {
    const reader = this.readers[index] as Reader;
    const process = `sub-${index}`;
    const { stream, shard } = reader;
    if (reader.sub === undefined)
      reader.sub = this.h.subscribe(process, stream, shard, reader.next);
    const log = this.log(stream, shard);
    const start = this.start(stream, shard);
    if (reader.next < start) {
      this.h.gap(reader.sub, process, stream, shard, reader.next, start);
      reader.next = start;
    }
    for (let i = 0; i < steps && reader.next < log.length; i++) {
      this.h.deliver(reader.sub, process, stream, shard, reader.next, log[reader.next] as string);
      reader.next += 1;
    }
  }

  /** An in-memory stream's broker drops records a slow reader missed, and tells it. */
  private drop(index: number, count: number) {
    const reader = this.readers[index] as Reader;
    const length = this.log(reader.stream, reader.shard).length;
    if (reader.stream !== 'm' || reader.sub === undefined || reader.next >= length) return;
    const to = Math.min(length, reader.next + count);
    this.h.gap(reader.sub, `sub-${index}`, reader.stream, reader.shard, reader.next, to);
    reader.next = to;
  }

  /** A put; with `seen` defined, a get runs while the put is in flight and sees it or not. */
  private put(keyIndex: number, outcome: Outcome, seen: boolean | undefined) {
    const key = KEYS[keyIndex] as string;
    const value = this.nextValue();
    const applies = outcome === 'ok' || outcome === 'infoApplied';
    const put = this.h.cachePut('cache-0', 'c', key, value);
    if (seen !== undefined) {
      if (applies && seen) this.cache.set(key, value);
      this.get(keyIndex);
    }
    if (applies) this.cache.set(key, value);
    this.complete(put, outcome);
  }

  private get(keyIndex: number) {
    const key = KEYS[keyIndex] as string;
    this.h.cacheGet('cache-1', 'c', key).ok({ value: this.cache.get(key) ?? null });
  }

  private add(keyIndex: number, delta: number, outcome: Outcome) {
    const key = KEYS[keyIndex] as string;
    if (this.complete(this.h.counterAdd('counter-0', 'n', key, delta), outcome)) {
      this.counter.set(key, (this.counter.get(key) ?? 0) + delta);
    }
  }

  private record(group: number, shard: number, offset: number): GroupRecord {
    const records = this.groups[group] as Map<string, GroupRecord>;
    let r = records.get(`${shard}/${offset}`);
    if (r === undefined) {
      r = {
        acked: false,
        ackVolatile: false,
        dead: false,
        attempts: 0,
        holder: undefined,
        claimedAt: 0,
        holders: new Set(),
      };
      records.set(`${shard}/${offset}`, r);
    }
    return r;
  }

  /** Hands out up to `max` records nobody holds (or whose claim lapsed); returns their offsets. */
  private poll(group: number, consumer: string, shard: number, max: number): number[] {
    const log = this.log('s', shard);
    const invokeAt = this.h.clock() + 1;
    const handed: { offset: number; value: string; attempt: number }[] = [];
    for (let o = this.start('s', shard); o < log.length && handed.length < max; o++) {
      const r = this.record(group, shard, o);
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
    this.h.poll(consumer, 's', (GROUPS[group] as (typeof GROUPS)[number]).group, shard, handed);
    return handed.map((r) => r.offset);
  }

  private settle(group: number, consumer: number, pick: number, outcome: Outcome | 'nack') {
    const name = `group-${consumer}`;
    const held = [...(this.groups[group] as Map<string, GroupRecord>)].filter(([, r]) =>
      r.holders.has(name),
    );
    const chosen = held[pick % Math.max(1, held.length)];
    if (chosen === undefined) return;
    const [where, r] = chosen;
    const [shard, offset] = where.split('/').map(Number) as [number, number];
    const groupName = (GROUPS[group] as (typeof GROUPS)[number]).group;
    if (outcome === 'nack') {
      this.h.nack(name, 's', groupName, shard, offset).ok();
      r.holders.delete(name);
      if (r.holder === name) r.holder = undefined;
      return;
    }
    if (this.complete(this.h.ack(name, 's', groupName, shard, offset), outcome)) {
      if (!r.acked) r.ackVolatile = GROUPS[group]?.cursor === 'periodic';
      r.acked = true;
    }
  }

  /** The periodic cursor's timer: acks so far survive a kill from now on. */
  private flushCursors() {
    for (const records of this.groups) for (const r of records.values()) r.ackVolatile = false;
  }

  private fault(fault: 'kill' | 'pause' | 'partition') {
    const heal = { kill: 'restart', pause: 'resume', partition: 'heal' }[fault];
    this.h.nemesis(fault, 'broker-0');
    this.h.at(this.h.clock() + 5);
    this.h.nemesis(heal, 'broker-0');
    for (const reader of this.readers) reader.sub = undefined;
    for (const records of this.groups) {
      for (const r of records.values()) {
        r.holder = undefined;
        if (fault === 'kill' && r.ackVolatile) {
          r.acked = false;
          r.ackVolatile = false;
        }
      }
    }
  }

  /** Processes that stopped with a request open (its outcome unknown to the checker). */
  private stop(stops: Stops) {
    if (stops.publish) {
      const value = this.nextValue();
      this.h.publish('pub-1', 's', value);
      if (stops.applied) this.log('s', 0).push(value);
    }
    if (stops.put) {
      const value = this.nextValue();
      this.h.cachePut('cache-0', 'c', 'k0', value);
      if (stops.applied) this.cache.set('k0', value);
    }
    if (stops.add) {
      this.h.counterAdd('counter-0', 'n', 'k1', 7);
      if (stops.applied) this.counter.set('k1', (this.counter.get('k1') ?? 0) + 7);
    }
  }

  /** After the faults: drain the groups, then read every shard, cache key and counter key. */
  private finish() {
    this.h.at(this.h.clock() + MODEL_VISIBILITY_MS + 1);
    GROUPS.forEach((g, group) => {
      for (let shard = 0; shard < SHARDS; shard++) {
        for (const offset of this.poll(group, 'group-final', shard, Number.POSITIVE_INFINITY)) {
          this.h.ack('group-final', 's', g.group, shard, offset).ok();
          this.record(group, shard, offset).acked = true;
        }
        const dead = [...(this.groups[group] as Map<string, GroupRecord>)]
          .filter(([where, r]) => r.dead && where.startsWith(`${shard}/`))
          .map(([where]) => Number(where.split('/')[1]));
        this.h.groupFinal('s', g.group, shard, this.log('s', shard).length, dead);
      }
    });
    for (const { stream, shard } of PLACES) {
      const start = this.start(stream, shard);
      this.h.finalRead(stream, shard, start, this.log(stream, shard).slice(start));
    }
    for (const key of KEYS) {
      this.h.cacheFinal('c', key, this.cache.get(key) ?? null);
      this.h.counterFinal('n', key, this.counter.get(key) ?? 0);
    }
  }
}
