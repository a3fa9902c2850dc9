// A child process for the compaction crash tests: writes the fixed dataset once (flushed), then
// compacts over and over, printing a JSON line at each step, until the test SIGKILLs it.
// Usage: node --import tsx compaction-crash-child.ts <root> <cache|counter>
import { LogCache } from '../../src/cache/log-cache.js';
import { CounterLog } from '../../src/counter/counter-log.js';
import { cacheWrites, counterAdds } from './crash-dataset.js';
import { openPort } from './disk.js';

const [root, kind] = process.argv.slice(2) as [string, 'cache' | 'counter'];
let step = 0;
const say = (what: string) => {
  process.stdout.write(`${JSON.stringify({ what, step: step++ })}\n`);
};
const hooks = {
  auto: false,
  bytesPerSec: 0,
  beforeBatch: async () => say('batch'),
  beforeTrim: async () => say('trim'),
};

async function main(): Promise<void> {
  if (kind === 'cache') {
    const port = await openPort(root, 'caches');
    const cache = await LogCache.open({ log: port, compaction: hooks });
    if (port.tailOffset === 0) {
      for (const w of cacheWrites()) {
        if (w.op === 'put') await cache.put(w.key, new TextEncoder().encode(w.value));
        else await cache.delete(w.key);
      }
      await port.flush();
    }
    say('written');
    for (;;) {
      await cache.compact();
      say('pass');
    }
  }
  const port = await openPort(root, 'counters');
  const counters = await CounterLog.open({ log: port, compaction: hooks });
  if (port.tailOffset === 0) {
    for (const a of counterAdds()) await counters.add(a.key, a.delta);
    await port.flush();
  }
  say('written');
  for (;;) {
    await counters.compact();
    say('pass');
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
