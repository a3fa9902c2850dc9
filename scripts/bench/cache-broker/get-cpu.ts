/**
 * CPU per cache get, client and broker: one TLS client doing N sequential gets of 1,000 hot keys
 * (100-byte values) against a fresh broker, after 20,000 untimed ones. Prints the wall time per
 * get and the CPU each process spent per get (`process.cpuUsage()`, /proc for the broker).
 *
 *   node --import tsx scripts/bench/cache-broker/get-cpu.ts      (N=60000 for more gets)
 *
 * It separates what a get costs in CPU from what a round trip costs in waiting, which the
 * paired latency rounds of main.ts cannot (see docs/perf.md, session 3).
 */
import { readFileSync } from 'node:fs';
import { connect } from '@felix/client';
import { startBenchBroker } from './broker.js';
/** CPU seconds (user + system) a process has used, from /proc (10 ms ticks). */
const cpu = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(x[11]) + Number(x[12])) / 100;
};
const broker = await startBenchBroker('caches:\n  - { tenant: bench, name: kv }\n');
const c = await connect({
  servers: [broker.url('tls')],
  tenant: 'bench',
  tls: { fingerprint: broker.fingerprint },
});
const kv = c.cache('kv');
for (let i = 0; i < 1000; i++) await kv.put(`k${i}`, new Uint8Array(100).fill(42));
for (let i = 0; i < 20000; i++) await kv.get(`k${i % 1000}`);
const N = Number(process.env.N ?? 30000);
const b0 = cpu(broker.pid);
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < N; i++) await kv.get(`k${i % 1000}`);
const wall = ((performance.now() - t0) * 1000) / N;
const cc = process.cpuUsage(c0);
const bc = ((cpu(broker.pid) - b0) * 1e6) / N;
console.log(
  `per get: wall ${wall.toFixed(1)} µs, client CPU ${((cc.user + cc.system) / N).toFixed(1)} µs, broker CPU ${bc.toFixed(1)} µs`,
);
await c.close();
await broker.stop();
