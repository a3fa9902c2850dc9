// Small builders so each test history reads as a story: every call appends the lines a
// recorder would write, on a clock that moves one millisecond per line unless told `at(t)`.
import type { HandedOut, HistoryLine, MetaLine, Report, RuleName } from '../../src/index.js';
import { check } from '../../src/index.js';

type Meta = Omit<MetaLine, 'f' | 't' | 'process' | 'phase' | 'id'>;
type Fields = Record<string, unknown>;

/** One request in flight: complete it with ok, fail or info (or leave it, as a stopped process). */
export class Pending {
  constructor(
    private readonly history: History,
    readonly id: string,
    private readonly f: string,
    private readonly process: string,
  ) {}

  ok(fields: Fields = {}): Pending {
    this.history.emit({ f: this.f, process: this.process, phase: 'ok', id: this.id, ...fields });
    return this;
  }
  fail(error = 'refused'): Pending {
    this.history.emit({ f: this.f, process: this.process, phase: 'fail', id: this.id, error });
    return this;
  }
  info(error = 'timeout'): Pending {
    this.history.emit({ f: this.f, process: this.process, phase: 'info', id: this.id, error });
    return this;
  }
}

export class History {
  readonly lines: HistoryLine[] = [];
  private now = 0;
  private readonly counts = new Map<string, number>();

  constructor(meta: Partial<Meta> = {}) {
    this.lines.push({
      f: 'meta',
      t: 0,
      process: 'campaign',
      phase: 'ok',
      id: 'meta',
      seed: meta.seed ?? 1,
      streams: meta.streams ?? [{ name: 's', shards: 1, durable: true }],
      groups: meta.groups ?? [],
      caches: meta.caches ?? [],
      counters: meta.counters ?? [],
    });
  }

  /** The time of the last line written. */
  clock(): number {
    return this.now;
  }

  /** Moves the clock so the next line is written at `t`. */
  at(t: number): this {
    this.now = t - 1;
    return this;
  }

  emit(fields: Fields): void {
    this.now += 1;
    this.lines.push({ t: this.now, ...fields } as unknown as HistoryLine);
  }

  private nextId(process: string): string {
    const n = (this.counts.get(process) ?? 0) + 1;
    this.counts.set(process, n);
    return `${process}:${n}`;
  }

  invoke(process: string, f: string, fields: Fields): Pending {
    const id = this.nextId(process);
    this.emit({ f, process, phase: 'invoke', id, ...fields });
    return new Pending(this, id, f, process);
  }

  private observe(process: string, f: string, fields: Fields): void {
    this.emit({ f, process, phase: 'ok', id: this.nextId(process), ...fields });
  }

  publish(process: string, stream: string, value: string, attempt = 1): PublishPending {
    const p = this.invoke(process, 'publish', { stream, value, attempt });
    return new PublishPending(p);
  }
  subscribe(process: string, stream: string, shard: number, from: number): Pending {
    return this.invoke(process, 'subscribe', { stream, shard, from }).ok();
  }
  deliver(
    sub: Pending,
    process: string,
    stream: string,
    shard: number,
    offset: number,
    value: string,
    skipped = 0,
  ) {
    const told = skipped > 0 ? { skipped_before: skipped } : {};
    this.observe(process, 'deliver', { sub: sub.id, stream, shard, offset, value, ...told });
    return this;
  }
  gap(sub: Pending, process: string, stream: string, shard: number, from: number, to: number) {
    this.observe(process, 'gap', { sub: sub.id, stream, shard, from, to });
    return this;
  }
  finalRead(stream: string, shard: number, start: number, values: (string | null)[]): this {
    this.observe('final', 'final_read', { stream, shard, start, values });
    return this;
  }
  cachePut(process: string, cache: string, key: string, value: string): Pending {
    return this.invoke(process, 'cache_put', { cache, key, value });
  }
  cacheGet(process: string, cache: string, key: string): Pending {
    return this.invoke(process, 'cache_get', { cache, key });
  }
  cacheFinal(cache: string, key: string, value: string | null): this {
    this.observe('final', 'cache_final', { cache, key, value });
    return this;
  }
  counterAdd(process: string, counter: string, key: string, delta: number): Pending {
    return this.invoke(process, 'counter_add', { counter, key, delta });
  }
  counterFinal(counter: string, key: string, value: number): this {
    this.observe('final', 'counter_final', { counter, key, value });
    return this;
  }
  poll(consumer: string, stream: string, group: string, shard: number, records: HandedOut[]) {
    return this.invoke(consumer, 'group_poll', { stream, group, shard, consumer }).ok({ records });
  }
  ack(consumer: string, stream: string, group: string, shard: number, offset: number): Pending {
    return this.invoke(consumer, 'group_ack', { stream, group, shard, offset, consumer });
  }
  nack(consumer: string, stream: string, group: string, shard: number, offset: number): Pending {
    return this.invoke(consumer, 'group_nack', { stream, group, shard, offset, consumer });
  }
  groupFinal(
    stream: string,
    group: string,
    shard: number,
    end: number,
    deadLettered: number[] = [],
  ) {
    this.observe('final', 'group_final', { stream, group, shard, end, deadLettered });
    return this;
  }
  nemesis(fault: string, target: string): Pending {
    return this.invoke('nemesis', 'nemesis', { fault, target }).ok();
  }

  text(): string {
    return `${this.lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  }
}

export class PublishPending {
  constructor(readonly pending: Pending) {}
  ok(shard: number, offset: number): PublishPending {
    this.pending.ok({ shard, offset });
    return this;
  }
  info(): PublishPending {
    this.pending.info('unknown_outcome');
    return this;
  }
  fail(): PublishPending {
    this.pending.fail('refused');
    return this;
  }
}

export function history(meta: Partial<Meta> = {}): History {
  return new History(meta);
}

/** The rules a history breaks, sorted, for exact expectations. */
export function brokenRules(report: Report): RuleName[] {
  return (Object.keys(report.byRule) as RuleName[]).filter((r) => report.byRule[r] > 0).sort();
}

export function verdictOf(h: History): Report {
  return check(h.lines);
}
