/**
 * A counter and a histogram for the publish path, kept as plain numbers when counted and handed
 * to the prom-client registry only when it is read. prom-client's own `inc` and `observe` check
 * and hash their labels on every call: about 4 % of the broker's CPU per awaited publish
 * (docs/perf.md, "Natural loops (session 17)"). Each metric has at most one label, whose values
 * are fixed up front; a call names its value by index. What a scrape shows is what prom-client's
 * Counter and Histogram show for the same calls
 * (`tally_metrics_read_as_prom_client_metrics_fed_the_same_calls`).
 */
import type { Registry } from 'prom-client';

interface Label {
  name: string;
  values: readonly string[];
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
  /** Always absent: prom-client's JSON carries the field (null on buckets), so this does too. */
  exemplar?: null;
}

interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: ExportedValue[];
  aggregator: 'sum';
}

/** The label values counted so far, in the order they were first counted (as prom-client). */
class SeenOrder {
  private readonly seen: Uint8Array;
  readonly order: number[] = [];

  constructor(n: number) {
    this.seen = new Uint8Array(n);
  }

  mark(index: number): void {
    if (this.seen[index] === 1) return;
    this.seen[index] = 1;
    this.order.push(index);
  }

  clear(): void {
    this.seen.fill(0);
    this.order.length = 0;
  }
}

export class TallyCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly counts: Float64Array;
  private readonly seen: SeenOrder;

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
    private readonly label?: Label,
  ) {
    const n = label?.values.length ?? 1;
    this.counts = new Float64Array(n);
    this.seen = new SeenOrder(n);
    // An unlabelled counter shows 0 before anything is counted, as prom-client's does.
    if (label === undefined) this.seen.mark(0);
    registry.registerMetric(this as never);
  }

  /** Adds `by` (default 1) to the count of the label value at `index` (0 when unlabelled). */
  inc(by = 1, index = 0): void {
    this.counts[index]! += by;
    this.seen.mark(index);
  }

  async get(): Promise<Exported> {
    const values = this.seen.order.map((i) => ({
      labels: this.label === undefined ? {} : { [this.label.name]: this.label.values[i]! },
      value: this.counts[i]!,
    }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' };
  }

  reset(): void {
    this.counts.fill(0);
    this.seen.clear();
    if (this.label === undefined) this.seen.mark(0);
  }
}

export class TallyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Per label value: one count per bucket bound, then the count above the last bound. */
  private readonly counts: Float64Array;
  private readonly sums: Float64Array;
  private readonly seen: SeenOrder;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
    private readonly label: Label,
  ) {
    this.counts = new Float64Array(label.values.length * (bounds.length + 1));
    this.sums = new Float64Array(label.values.length);
    this.seen = new SeenOrder(label.values.length);
    registry.registerMetric(this as never);
  }

  /** One observation of `value` for the label value at `index`. */
  observe(index: number, value: number): void {
    const bounds = this.bounds;
    let b = 0;
    while (b < bounds.length && value > bounds[b]!) b++;
    this.counts[index * (bounds.length + 1) + b]!++;
    this.sums[index]! += value;
    this.seen.mark(index);
  }

  /** What the registry's JSON reads: each value's labels with the shared ones merged in. */
  async get(): Promise<Exported> {
    const out = await this.getForPromString();
    out.values = out.values.map(({ labels, sharedLabels, ...rest }) => ({
      ...rest,
      labels: { ...labels, ...sharedLabels },
    }));
    return out;
  }

  /** What the registry's text exposition reads (prom-client's own histogram has both). */
  async getForPromString(): Promise<Exported> {
    const values: ExportedValue[] = [];
    const width = this.bounds.length + 1;
    for (const i of this.seen.order) {
      const shared = { [this.label.name]: this.label.values[i]! };
      let acc = 0;
      for (let b = 0; b < this.bounds.length; b++) {
        acc += this.counts[i * width + b]!;
        values.push(this.value({ le: this.bounds[b]! }, shared, acc, 'bucket'));
      }
      const count = acc + this.counts[i * width + this.bounds.length]!;
      values.push(this.value({ le: '+Inf' }, shared, count, 'bucket'));
      values.push(this.value({}, shared, this.sums[i]!, 'sum'));
      values.push(this.value({}, shared, count, 'count'));
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' };
  }

  private value(
    labels: Record<string, string | number>,
    sharedLabels: Record<string, string>,
    value: number,
    suffix: string,
  ): ExportedValue {
    const exemplar = suffix === 'bucket' ? null : undefined;
    return { labels, sharedLabels, value, metricName: `${this.name}_${suffix}`, exemplar };
  }

  reset(): void {
    this.counts.fill(0);
    this.sums.fill(0);
    this.seen.clear();
  }
}
