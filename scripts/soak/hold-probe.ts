/**
 * RSS per open connection: K clients connect and publish once and stay open; the broker's memory
 * is read (after full collections) before, while they are open, and after they closed.
 *
 *   node --import tsx scripts/soak/hold-probe.ts [--clients 300] [--transport tls,quic]
 */
import { connect } from '@felix/client';
import { argValue, brokerArgsFromEnv, startBroker } from '@felix/testing-bench-kit';
import { formatFigures } from './broker-memory.js';
import { collectGarbage, gcNodeArgs, settledFigures } from './gc.js';
import type { TransportName } from './churn.js';

const clients = Number(argValue('--clients', '300'));
const transports = argValue('--transport', 'tls,quic').split(',') as TransportName[];
const record = new Uint8Array(100).fill(1);

for (const transport of transports) {
  const broker = await startBroker({
    config: 'streams:\n  - { tenant: t1, name: hold }\n',
    nodeArgs: [...brokerArgsFromEnv(), ...gcNodeArgs()],
    env: { FELIX_MEMORY_RING_RECORDS: '64' },
  });
  const open = async () => {
    const c = await connect({
      servers: [broker.url(transport)],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    await c.publish('hold', record);
    return c;
  };
  for (const c of await Promise.all(Array.from({ length: 20 }, open))) await c.close();
  const before = await settledFigures(broker);
  const held = [];
  for (let i = 0; i < clients; i += 10)
    held.push(...(await Promise.all(Array.from({ length: 10 }, open))));
  const during = await settledFigures(broker);
  if (process.argv.includes('--snapshot-open')) {
    // with FELIX_BENCH_BROKER_ARGS="--heapsnapshot-signal=SIGUSR1 --diagnostic-dir=DIR"
    process.kill(broker.pid, 'SIGUSR1');
    await new Promise((r) => setTimeout(r, 8_000));
  }
  await Promise.all(held.map((c) => c.close()));
  await collectGarbage(broker);
  const after = await settledFigures(broker);
  const per = ((during.rssMiB - before.rssMiB) * 1024) / held.length;
  console.log(`${transport}: ${held.length} connections`);
  console.log(`  before ${formatFigures(before)}`);
  console.log(`  open   ${formatFigures(during)}  (${per.toFixed(1)} KiB RSS per connection)`);
  console.log(`  closed ${formatFigures(after)}`);
  await broker.stop();
}
