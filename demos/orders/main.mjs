// orders: an order flow on one broker using all four readings of the log together. Orders are
// published to a durable stream; a `billing` consumer group charges each one (one order fails
// once and is redelivered), adds the amount to a per-customer counter and records the order's
// status in a cache; a `shipping` group reads the same stream with its own cursor and marks
// billed orders shipped; a watch on the status cache prints every change as it happens.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { connect } from '@felix/client';
import { check, finish, runBroker, waitUntil } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const broker = await runBroker(
  'orders',
  [
    'streams:',
    '  - { tenant: shop, name: orders, durable: true, fsync: onCommit }',
    'caches:',
    '  - { tenant: shop, name: status, shards: 2 }',
    '  - { tenant: shop, name: customers }',
    '',
  ].join('\n'),
);
const shopToken = await broker.tokenFor('shop');
const connectShop = () =>
  connect({
    servers: [broker.url(transport)],
    tenant: 'shop',
    token: shopToken,
    tls: { fingerprint: broker.fingerprint },
  });
const felix = await connectShop();
const json = (b) => JSON.parse(new TextDecoder().decode(b));
const ac = new AbortController();
/** How long shipping holds an order waiting for billing: well inside its 30 s claim. */
const SHIP_WAIT_MS = 20_000;

const ORDERS = [
  { id: 'o1', customer: 'ada', cents: 1250 },
  { id: 'o2', customer: 'grace', cents: 800 },
  { id: 'o3', customer: 'ada', cents: 4999, flaky: true },
  { id: 'o4', customer: 'linus', cents: 300 },
  { id: 'o5', customer: 'grace', cents: 2100 },
];

// The status board: a watch over both shards of the status cache.
const status = felix.cache('status');
// ac.abort() at the end may reject a watch: that is how the board stops, so it is dropped.
const board = [0, 1].map((shard) =>
  (async () => {
    for await (const ev of status.watch({ prefix: 'order:' }, { shard, signal: ac.signal })) {
      if (ev.type === 'put')
        console.log(`  [status] ${ev.key} -> ${new TextDecoder().decode(ev.value)}`);
    }
  })().catch(() => undefined),
);

for (const order of ORDERS) await felix.publish('orders', JSON.stringify(order));
console.log(`published ${ORDERS.length} orders`);

// Billing: at-least-once, so charging is keyed by order id (a redelivery charges nothing twice).
const billing = (async () => {
  const client = await connectShop();
  const group = client.group('orders', 'billing', { shard: 0 });
  const revenue = client.counter('customers');
  const failedOnce = new Set();
  let billed = 0;
  let charges = 0;
  for await (const msg of group.consume({ max: 10, waitMs: 1000, signal: ac.signal })) {
    const order = json(msg.payload);
    if (order.flaky && !failedOnce.has(order.id)) {
      failedOnce.add(order.id);
      console.log(`  [billing] ${order.id} card declined (try ${msg.attempts}); handing it back`);
      await msg.nack({ delayMs: 200 });
      continue;
    }
    const charged = await client.cache('status').get(`charged:${order.id}`);
    if (charged === undefined) {
      const total = await revenue.add(`revenue:${order.customer}`, BigInt(order.cents));
      await client.cache('status').put(`charged:${order.id}`, 'yes');
      charges++;
      console.log(
        `  [billing] ${order.id} charged ${order.cents}c to ${order.customer} (total ${total}c, try ${msg.attempts})`,
      );
    }
    await client.cache('status').put(`order:${order.id}`, 'billed');
    await msg.ack();
    if (++billed === ORDERS.length) break;
  }
  await client.close();
  check(
    charges === ORDERS.length && failedOnce.size === 1,
    'billing charged each order once, the declined one after its redelivery',
    `${charges} charges, ${failedOnce.size} declined once`,
  );
})();

// Shipping: the same stream, its own cursor; it ships an order once billing has marked it.
const shipping = (async () => {
  const client = await connectShop();
  const group = client.group('orders', 'shipping', { shard: 0 });
  let shipped = 0;
  for await (const msg of group.consume({ max: 10, waitMs: 1000, signal: ac.signal })) {
    const order = json(msg.payload);
    const billed = async () => {
      const state = await client.cache('status').get(`order:${order.id}`);
      return state !== undefined && new TextDecoder().decode(state) === 'billed';
    };
    // Not billed yet: hold the claim and wait, rather than nack. Each nack spends one of the
    // record's attempts (5 by default), and a slow billing would turn the order into a dead
    // letter for shipping.
    if (!(await billed())) {
      console.log(`  [shipping] ${order.id} not billed yet; holding it until it is`);
      await waitUntil(`${order.id} to be billed`, billed, SHIP_WAIT_MS);
    }
    await client.cache('status').put(`order:${order.id}`, 'shipped');
    await msg.ack();
    if (++shipped === ORDERS.length) break;
  }
  await client.close();
})();

await Promise.all([billing, shipping]);
console.log('\nrevenue per customer:');
for (const customer of ['ada', 'grace', 'linus']) {
  const total = await felix.counter('customers').get(`revenue:${customer}`);
  console.log(`  ${customer}: ${total}c`);
  const owed = ORDERS.filter((o) => o.customer === customer).reduce((n, o) => n + o.cents, 0);
  check(total === BigInt(owed), `${customer}'s revenue is the sum of their orders`, `${owed}c`);
}
const states = [];
for (const order of ORDERS) {
  const state = await felix.cache('status').get(`order:${order.id}`);
  states.push(state === undefined ? '(absent)' : new TextDecoder().decode(state));
}
check(
  states.every((s) => s === 'shipped'),
  'every order ends shipped',
  states.join(' '),
);
for (const name of ['billing', 'shipping']) {
  const d = await felix.group('orders', name).describe();
  console.log(`${name}:`, d);
  check(
    d.committed === ORDERS.length && d.inFlight === 0 && d.deadLetters === 0,
    `the ${name} group's cursor is past every order, with nothing in flight or dead`,
  );
}
ac.abort();
await Promise.all(board);
await felix.close();
await broker.stop();
finish();
