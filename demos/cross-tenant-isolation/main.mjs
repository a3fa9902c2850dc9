// cross-tenant-isolation: two tenants, t1 and t2, on a Postgres-backed control plane with one
// broker joined to it. Each tenant has its own signing key, so a t1 token is refused at auth by
// a t2 connection and by t2's REST routes; inside t2, a principal without grants is forbidden
// each call; t2's own app works, and sees none of t1's data. Prints PASS/FAIL per step and exits
// 1 on any failure. Environment: FELIX_DEMO_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test); every run uses a fresh schema.
import { randomBytes } from 'node:crypto';
import { connect } from '@felix/client';
import {
  cacheServed,
  expectForbidden,
  firstRecord,
  startSecureCluster,
  steps,
} from '@felix/demo-support';

const POSTGRES_URL =
  process.env.FELIX_DEMO_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `felix_demo_${randomBytes(6).toString('hex')}`;
const [NS, STREAM, CACHE] = ['app', 'events', 'profiles'];
const { step, exitCode } = steps();

const cluster = await startSecureCluster({
  name: 'cross-tenant-isolation',
  postgres: { url: POSTGRES_URL, schema: SCHEMA },
});
/** The same data permissions inside `tenant`'s namespace: what an app of that tenant holds. */
const appPermissions = (tenant) => [
  `stream.publish:stream:${tenant}/${NS}/*`,
  `stream.subscribe:stream:${tenant}/${NS}/*`,
  `cache.read:cache:${tenant}/${NS}/*`,
  `cache.write:cache:${tenant}/${NS}/*`,
];
const client = (tenant, token) =>
  connect({ servers: cluster.servers, tls: cluster.tls, tenant, namespace: NS, token });
const admin = {};

await step(
  `bootstrap t1 and t2, each with a stream and a cache (Postgres schema ${SCHEMA})`,
  async () => {
    for (const tenant of ['t1', 't2']) {
      const res = await cluster.bootstrap(tenant, 'initialize', {
        initial_admin_principals: ['admin'],
      });
      if (res.status !== 200)
        throw new Error(`${tenant}: ${res.status} ${JSON.stringify(res.body)}`);
      admin[tenant] = await cluster.devToken(
        tenant,
        'admin',
        [`tenant.manage:tenant:${tenant}`],
        'felix-controlplane',
      );
      const base = `/v1/tenants/${tenant}/namespaces`;
      for (const [path, body] of [
        [base, { namespace: NS }],
        [`${base}/${NS}/streams`, { stream: STREAM, shards: 1 }],
        [`${base}/${NS}/caches`, { cache: CACHE }],
      ]) {
        const made = await cluster.api(admin[tenant], 'POST', path, body);
        if (made.status !== 201) throw new Error(`POST ${path}: ${made.status}`);
      }
    }
    await cluster.shardsHeld(2);
    return 'each tenant has its own signing key';
  },
);

const t1Token = await cluster.devToken('t1', 't1-app', appPermissions('t1'));
const t1 = await client('t1', t1Token);
await step('t1 app writes its own stream and cache', async () => {
  await cacheServed(t1, CACHE);
  const { offset } = await t1.publish(STREAM, 't1-secret');
  await t1.cache(CACHE).put('user', 't1-secret');
  return `published at ${offset}`;
});

await step('a t1 token is refused at auth on a t2 connection', async () => {
  try {
    const c = await client('t2', t1Token);
    await c.close();
  } catch (err) {
    const cause = err.cause ?? err;
    if (cause.code !== 'FELIX_CLIENT_UNAUTHENTICATED') throw new Error(`got ${err}`);
    return `${err.code}, cause ${cause.code}: ${cause.message}`;
  }
  throw new Error('the broker accepted a t1 token for tenant t2');
});

await step("t1's admin token cannot read or change t2's catalog", async () => {
  const read = await cluster.api(admin.t1, 'GET', `/v1/tenants/t2/namespaces/${NS}/streams`);
  const drop = await cluster.api(
    admin.t1,
    'DELETE',
    `/v1/tenants/t2/namespaces/${NS}/streams/${STREAM}`,
  );
  if (![401, 403].includes(read.status) || ![401, 403].includes(drop.status))
    throw new Error(`GET ${read.status}, DELETE ${drop.status}`);
  return `GET ${read.status} ${read.body?.code}, DELETE ${drop.status} ${drop.body?.code}`;
});

await step('a t2 principal without grants is forbidden each call', async () => {
  const nobody = await client('t2', await cluster.devToken('t2', 't2-nobody', []));
  const stream = `stream:t2/${NS}/${STREAM}`;
  try {
    return [
      await expectForbidden(() => nobody.publish(STREAM, 'x'), 'stream.publish', stream),
      await expectForbidden(() => firstRecord(nobody, STREAM, 0), 'stream.subscribe', stream),
      await expectForbidden(
        () => nobody.cache(CACHE).get('user'),
        'cache.read',
        `cache:t2/${NS}/${CACHE}`,
      ),
    ].join('; ');
  } finally {
    await nobody.close();
  }
});

await step("t2's own app works and sees none of t1's data", async () => {
  const t2 = await client('t2', await cluster.devToken('t2', 't2-app', appPermissions('t2')));
  try {
    await cacheServed(t2, CACHE);
    const cached = await t2.cache(CACHE).get('user');
    if (cached !== undefined) throw new Error("t2's cache holds t1's value");
    const { offset } = await t2.publish(STREAM, 't2-own');
    const first = new TextDecoder().decode((await firstRecord(t2, STREAM, 0)).data);
    if (offset !== 0 || first !== 't2-own') throw new Error(`t2's stream starts with "${first}"`);
    return `t2 cache "user" absent, t2 stream starts with "${first}"`;
  } finally {
    await t2.close();
  }
});

await t1.close();
await cluster.stop();
process.exit(exitCode());
