// state-divergence: two consumers keep a copy of the same inventory while a writer changes it,
// and both stall for a while. One holds it the lossy way: a plain subscriber on an in-memory
// stream of change events, applying each event it gets; when its queue overflows events are
// dropped, it is told so (`lostBefore`), but it cannot get them back, so its copy diverges. The
// other folds a retained cache watch: the current values, `state_complete`, then each change by
// offset; when it lags the watch resumes from the first change it missed, and when compaction
// has trimmed that history the broker says `resnapshot` and sends the current values again, so
// its copy ends equal to the truth. The demo prints the truth and both copies and checks them.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { connect } from '@felix/client';
import { check, finish, runBroker, waitUntil } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const KEYS = 30;
const INITIAL_KEYS = 20;
const LIVE_CHANGES = 20;
const STALLED_CHANGES = 400;
const AFTER_CHANGES = 10;
/** Each value (and each change event) carries a document this large, so a stall fills queues. */
const DOC_BYTES = 16 * 1024;
const SEED = 24;

const broker = await runBroker(
  'state-divergence',
  [
    'streams:',
    '  - { tenant: t1, name: changes }',
    'caches:',
    '  - { tenant: t1, name: inventory, shards: 1 }',
    '',
  ].join('\n'),
  // Small queues, so a stall of a few hundred changes overflows both consumers.
  { FELIX_BROKER_WATCH_QUEUE_CAPACITY: '16', FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: '65536' },
);
const open = async () =>
  connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    token: await broker.tokenFor('t1'),
    tls: { fingerprint: broker.fingerprint },
  });
const text = (b) => new TextDecoder().decode(b);
/** A change or value as bytes: its head (what the demo reads) padded to DOC_BYTES. */
const doc = (head) => {
  const bytes = new Uint8Array(DOC_BYTES).fill(32);
  new TextEncoder().encodeInto(`${head}|`, bytes);
  return bytes;
};
const headOf = (bytes) => text(bytes.subarray(0, 64)).split('|');

// The writer: each change goes to the cache, then to the change stream; `truth` is the state.
const truth = new Map(); // key -> "v<seq> qty=<n>"
let seq = 0;
const writer = await open();
const inventory = writer.cache('inventory');
async function change(key, qty) {
  seq++;
  if (qty === undefined) {
    await inventory.delete(key);
    truth.delete(key);
    await writer.publish('changes', doc(`del|${key}|${seq}`));
  } else {
    const state = `v${seq} qty=${qty}`;
    await inventory.put(key, doc(`${state}`));
    truth.set(key, state);
    await writer.publish('changes', doc(`put|${key}|${seq}|${state}`));
  }
}
let prng = SEED;
const random = () => {
  prng = (prng * 1103515245 + 12345) % 2147483648;
  return prng / 2147483648;
};
const keyOf = (i) => `sku-${String(i).padStart(2, '0')}`;
/** A random change: mostly puts, a delete a third of the time when the key exists. */
const randomChange = () => {
  const key = keyOf(Math.floor(random() * KEYS));
  const qty = Math.floor(random() * 100);
  return change(key, truth.has(key) && random() < 0.33 ? undefined : qty);
};

for (let i = 0; i < INITIAL_KEYS; i++) await change(keyOf(i), 10);
console.log(`writer: ${INITIAL_KEYS} keys in the cache, each change also published to a stream`);

let stalled = false;
let resume;
const resumed = new Promise((r) => {
  resume = r;
});

// The retained way: fold the watch; `resnapshot` means drop what you hold, current values follow.
const retained = { state: new Map(), lastSeq: 0, complete: 0, lags: [], resnapshots: 0 };
const watcher = await open();
const watchAc = new AbortController();
const watching = (async () => {
  const events = watcher
    .cache('inventory')
    .watch({ prefix: 'sku-' }, { retained: true, signal: watchAc.signal });
  for await (const ev of events) {
    if (stalled) await resumed;
    if (ev.type === 'put') {
      const [state] = headOf(ev.value);
      retained.state.set(ev.key, state);
      retained.lastSeq = Math.max(retained.lastSeq, Number(state.split(' ')[0].slice(1)));
    } else if (ev.type === 'delete') retained.state.delete(ev.key);
    else if (ev.type === 'resnapshot') {
      retained.resnapshots++;
      retained.state.clear();
    } else if (ev.type === 'state_complete') retained.complete++;
    else if (ev.type === 'lagged') retained.lags.push(ev.resumeFrom);
  }
})().catch((err) => {
  if (!watchAc.signal.aborted) throw err;
});

// The lossy way: apply each change event a plain subscription delivers.
const lossy = { state: new Map(), lastSeq: 0, lost: 0 };
const subscriber = await open();
const subAc = new AbortController();
const subscribing = (async () => {
  const events = subscriber.subscribe('changes', {
    from: 'earliest',
    shard: 0,
    signal: subAc.signal,
  });
  for await (const ev of events) {
    if (stalled) await resumed;
    lossy.lost += ev.lostBefore;
    const [op, key, n, state] = headOf(ev.data);
    if (op === 'put') lossy.state.set(key, state);
    else lossy.state.delete(key);
    lossy.lastSeq = Number(n);
  }
})().catch((err) => {
  if (!subAc.signal.aborted) throw err;
});

await waitUntil(
  'both consumers to hold the initial state',
  () => retained.complete === 1 && lossy.lastSeq === seq,
);
check(
  retained.state.size === INITIAL_KEYS,
  'the retained watch started from a snapshot of the current values',
  `${retained.state.size} values, then state complete`,
);
/** A put, then a wait until both consumers applied it (the retained one learns seq from puts). */
async function caughtUp(what) {
  await change(keyOf(0), Math.floor(random() * 100));
  const last = seq;
  await waitUntil(what, () => retained.lastSeq === last && lossy.lastSeq === last);
}
for (let i = 0; i < LIVE_CHANGES; i++) await randomChange();
await caughtUp('both consumers to apply the live changes');

stalled = true;
console.log(
  `both consumers stall; the writer makes ${STALLED_CHANGES} changes of ${DOC_BYTES / 1024} KiB`,
);
for (let i = 0; i < STALLED_CHANGES; i++) await randomChange();
stalled = false;
resume();
console.log(`both consumers read again; the writer makes ${AFTER_CHANGES} more changes`);
for (let i = 0; i < AFTER_CHANGES; i++) await randomChange();
await caughtUp('both consumers to apply the last change');

const show = (m) =>
  [...m.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k.slice(4)}:${v.split('qty=')[1]}`)
    .join(' ');
console.log(`truth    (${truth.size} keys): ${show(truth)}`);
console.log(`retained (${retained.state.size} keys): ${show(retained.state)}`);
console.log(`lossy    (${lossy.state.size} keys): ${show(lossy.state)}`);
console.log(
  `retained watch: lagged ${retained.lags.length} time(s) (resumed from ${retained.lags.join(', ') || '-'}), ` +
    `resnapshot ${retained.resnapshots} time(s)${retained.resnapshots > 0 ? ': the history it missed had been compacted away' : ': its history was replayed'}`,
);

const differs = (m) => {
  const keys = [...new Set([...m.keys(), ...truth.keys()])].sort();
  const kept = keys.filter((k) => !truth.has(k));
  const missing = keys.filter((k) => !m.has(k));
  const stale = keys.filter((k) => m.has(k) && truth.has(k) && m.get(k) !== truth.get(k));
  return { kept, missing, stale, count: kept.length + missing.length + stale.length };
};
const explain = (d) =>
  `keeps ${d.kept.length} deleted (${d.kept.join(' ') || '-'}), misses ${d.missing.length} ` +
  `(${d.missing.join(' ') || '-'}), holds ${d.stale.length} stale values (${d.stale.join(' ') || '-'})`;
const r = differs(retained.state);
check(
  r.count === 0,
  'the retained watch rebuilt exactly the true state after its stall',
  r.count === 0 ? undefined : explain(r),
);
const l = differs(lossy.state);
console.log(
  `lossy subscriber: told it lost ${lossy.lost} change events; its copy differs in ${l.count} keys: ${explain(l)}`,
);
check(
  lossy.lost > 0 && l.count > 0,
  'the lossy subscriber was told of its loss, and its copy diverged from the truth',
);

watchAc.abort();
subAc.abort();
await Promise.all([watching, subscribing]);
await Promise.all([writer.close(), watcher.close(), subscriber.close()]);
await broker.stop();
finish();
