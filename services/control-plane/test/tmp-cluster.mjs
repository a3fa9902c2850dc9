import { writeFileSync } from 'node:fs';
import { startCluster } from '@felix/testing-cluster';
const c = await startCluster({
  brokers: 1,
  streams: [
    { name: 'bench', shards: 1 },
    { name: 'multi', shards: 2 },
  ],
  caches: [{ name: 'kv' }],
});
await c.waitServed();
writeFileSync('/tmp/cli-run/ca.pem', c.caPem);
const o = c.clientOptions();
writeFileSync(
  '/tmp/cli-run/env',
  `export FELIX_SERVERS=${o.servers.join(',')} FELIX_TENANT=${o.tenant} FELIX_TOKEN=${o.token} FELIX_CA=/tmp/cli-run/ca.pem FELIX_SERVER_NAME=localhost\n`,
);
console.log('ready', c.dir);
process.on('SIGTERM', async () => {
  await c.shutdown();
  process.exit(0);
});
setInterval(() => {}, 1000);
