/**
 * CPU per cache get over TLS, this process and the broker's, one at a time over 1,000 hot keys.
 *
 *   N=30000 node --import tsx scripts/bench/cache-broker/get-cpu.ts
 */
import { connect } from '@felix/client';
import { procCpuSecs, startBroker } from '@felix/testing-bench-kit';

const cpu = procCpuSecs;
const broker = await startBroker({ config: 'caches:\n  - { tenant: bench, name: kv }\n' });
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
