/**
 * The broker's memory as the soak reads it: RSS from /proc (cheap enough to sample every
 * second) and the V8 figures from its /metrics (prom-client's default metrics), which tell
 * memory JavaScript holds from native memory nobody returned.
 */
import { type BenchBroker, rssMiB } from '@felix/testing-bench-kit';

export interface MemoryFigures {
  rssMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
  /** Connections the broker counts as open (felix_broker_connections, every transport). */
  connections: number;
}

const MIB = 1024 * 1024;

/** Sum of every sample of `name` (labels ignored) in Prometheus text; NaN when absent. */
export function metricSum(text: string, name: string): number {
  let sum = Number.NaN;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    sum = Number.isNaN(sum) ? v : sum + v;
  }
  return sum;
}

export async function memoryFigures(broker: BenchBroker): Promise<MemoryFigures> {
  const text = await broker.metricsText();
  return {
    rssMiB: rssMiB(broker.pid).rss,
    heapUsedMiB: metricSum(text, 'felix_broker_process_nodejs_heap_size_used_bytes') / MIB,
    externalMiB: metricSum(text, 'felix_broker_process_nodejs_external_memory_bytes') / MIB,
    connections: metricSum(text, 'felix_broker_connections'),
  };
}

export function formatFigures(f: MemoryFigures): string {
  return `rss ${f.rssMiB.toFixed(1)} MiB, heap ${f.heapUsedMiB.toFixed(1)} MiB, external ${f.externalMiB.toFixed(1)} MiB, connections ${f.connections}`;
}
