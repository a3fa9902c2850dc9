// notifications: multi-tenant alert fanout. Two tenants each have an `alerts` stream with
// several live dashboards subscribed, and a `recent` cache holding their last N alerts in N
// slots. Each alert is published (fanned out to that tenant's dashboards only) and written to
// its tenant's slot; a dashboard that joins late opens a retained watch on the slots and holds
// the last N alerts at once, then keeps receiving new ones.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { connect } from '@felix/client';
import { check, finish, runBroker } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const TENANTS = ['acme', 'globex'];
const DASHBOARDS = 3;
const LAST_N = 5;
const ALERTS = 12;

const yaml = [
  'streams:',
  ...TENANTS.map((t) => `  - { tenant: ${t}, name: alerts, durable: true }`),
  'caches:',
  ...TENANTS.map((t) => `  - { tenant: ${t}, name: recent }`),
  '',
].join('\n');
const broker = await runBroker('notifications', yaml);
const text = (b) => new TextDecoder().decode(b);
const open = async (tenant) =>
  connect({
    servers: [broker.url(transport)],
    tenant,
    token: await broker.tokenFor(tenant),
    tls: { fingerprint: broker.fingerprint },
  });

const ac = new AbortController();
const received = new Map(); // "tenant/dashboard" -> alerts seen
const readers = [];
const clients = [];
for (const tenant of TENANTS) {
  for (let d = 0; d < DASHBOARDS; d++) {
    const felix = await open(tenant);
    clients.push(felix);
    const name = `${tenant}/dash${d}`;
    received.set(name, []);
    // The streams are new, so reading from the earliest record misses nothing published after
    // this line, with no wait for the subscription to register.
    const sub = felix.subscribe('alerts', { from: 'earliest', signal: ac.signal });
    const it = sub[Symbol.asyncIterator]();
    const first = it.next(); // registers the subscription
    readers.push(
      (async () => {
        let r = await first;
        while (!r.done) {
          received.get(name).push(text(r.value.data));
          if (received.get(name).length === ALERTS) return;
          r = await it.next();
        }
      })(),
    );
  }
}
const publishers = Object.fromEntries(
  await Promise.all(TENANTS.map(async (t) => [t, await open(t)])),
);
for (let i = 0; i < ALERTS; i++) {
  for (const tenant of TENANTS) {
    const felix = publishers[tenant];
    const alert = `${tenant} alert #${i}`;
    await felix.publish('alerts', alert);
    await felix.cache('recent').put(`slot:${i % LAST_N}`, alert);
  }
}
await Promise.all(readers);
for (const [name, alerts] of received) {
  const tenant = name.split('/')[0];
  const foreign = alerts.filter((a) => !a.startsWith(tenant)).length;
  console.log(`${name}: ${alerts.length} alerts, ${foreign} from another tenant`);
  const expected = Array.from({ length: ALERTS }, (_, i) => `${tenant} alert #${i}`);
  check(
    alerts.join('|') === expected.join('|'),
    `${name} got every ${tenant} alert in order and none of another tenant`,
  );
}

// A dashboard joining late: a retained watch gives it the last N alerts immediately.
for (const tenant of TENANTS) {
  const felix = publishers[tenant];
  const watch = felix
    .cache('recent')
    .watch({ prefix: 'slot:' }, { retained: true, signal: ac.signal });
  const latest = [];
  for await (const ev of watch) {
    if (ev.type === 'put') latest.push(text(ev.value));
    if (ev.type === 'state_complete') break;
  }
  latest.sort((x, y) => Number(x.split('#')[1]) - Number(y.split('#')[1]));
  console.log(`late ${tenant} dashboard holds its last ${latest.length}:`, latest.join(' | '));
  const lastN = Array.from({ length: LAST_N }, (_, i) => `${tenant} alert #${ALERTS - LAST_N + i}`);
  check(
    latest.join('|') === lastN.join('|'),
    `a late ${tenant} dashboard holds exactly its last ${LAST_N} alerts at once`,
  );
}

ac.abort();
await Promise.all([...clients, ...Object.values(publishers)].map((c) => c.close()));
await broker.stop();
finish();
