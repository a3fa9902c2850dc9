/**
 * Full collections in a broker on demand, for readings that must not count garbage V8 has not
 * collected yet: the broker runs with `--expose-gc` and the gc-on-signal preload, and SIGUSR2
 * makes it collect.
 */
import { fileURLToPath } from 'node:url';
import type { BenchBroker } from '@felix/testing-bench-kit';
import { type MemoryFigures, memoryFigures } from './broker-memory.js';

const preload = fileURLToPath(new URL('./gc-on-signal.mjs', import.meta.url));
/** Long enough for two full collections of a small heap and the finalizers after them. */
const COLLECT_PAUSE_MS = 1_000;

/** The node flags that let `collectGarbage` work. */
export function gcNodeArgs(): string[] {
  return ['--expose-gc', '--import', preload];
}

export async function collectGarbage(broker: BenchBroker): Promise<void> {
  process.kill(broker.pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, COLLECT_PAUSE_MS));
}

/** The broker's memory after full collections. */
export async function settledFigures(broker: BenchBroker): Promise<MemoryFigures> {
  await collectGarbage(broker);
  return memoryFigures(broker);
}
