/**
 * The broker's RSS once a second (from /proc, so a busy broker cannot delay the reading), with
 * the phase it fell in, and the V8 figures from /metrics when they answer in time.
 */
import { type BenchBroker, rssMiB } from '@felix/testing-bench-kit';
import { metricSum } from './broker-memory.js';

export interface Sample {
  /** Seconds since the soak started. */
  t: number;
  phase: string;
  rssMiB: number;
  heapUsedMiB: number | null;
  /** V8's committed heap (what the heap holds of RSS, used or not). */
  heapTotalMiB: number | null;
  externalMiB: number | null;
}

const MIB = 1024 * 1024;
const SAMPLE_INTERVAL_MS = 1_000;

export class RssSampler {
  readonly samples: Sample[] = [];
  phase = 'start';
  private readonly t0 = Date.now();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly broker: BenchBroker) {}

  start(): void {
    this.timer = setInterval(() => void this.sample(), SAMPLE_INTERVAL_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The latest RSS (read now). */
  rss(): number {
    return rssMiB(this.broker.pid).rss;
  }

  private async sample(): Promise<void> {
    const s: Sample = {
      t: (Date.now() - this.t0) / 1000,
      phase: this.phase,
      rssMiB: this.rss(),
      heapUsedMiB: null,
      heapTotalMiB: null,
      externalMiB: null,
    };
    this.samples.push(s);
    try {
      const text = await this.broker.metricsText();
      s.heapUsedMiB = metricSum(text, 'felix_broker_process_nodejs_heap_size_used_bytes') / MIB;
      s.heapTotalMiB = metricSum(text, 'felix_broker_process_nodejs_heap_size_total_bytes') / MIB;
      s.externalMiB = metricSum(text, 'felix_broker_process_nodejs_external_memory_bytes') / MIB;
    } catch {
      // a broker too busy to answer /metrics still has its RSS sampled
    }
  }
}
