// slow-consumer: one in-memory stream fanned out to three subscribers while a publisher sends at
// a steady rate. Partway through, one subscriber stops reading for a while. Publishing never
// waits for a subscriber, so the publisher keeps its rate; the broker queues for the stalled
// subscriber up to its byte budget, then drops for it alone and tells it so: a `gap` status event
// and `lostBefore` on the next record it gets. The two that keep reading lose nothing: every
// offset arrives, in order, with its bytes. Environment: FELIX_TRANSPORT (quic | tls, default
// quic).
import { connect } from '@felix/client';
import { check, finish, runBroker, waitUntil } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const RATE_PER_S = 4000;
const RECORD_BYTES = 512;
/** The phases, in ms from the first publish: all read, one stalls, it reads again, the end. */
const STALL_AT_MS = 1000;
const RESUME_AT_MS = 4000;
const END_AT_MS = 5000;
const TICK_MS = 10;
/** The broker's queue per subscriber (128 MiB by default): smaller, so a 3 s stall overflows it
 *  while a subscriber that keeps reading has about 2 s of slack at this rate. */
const BUDGET_BYTES = 4 * 1024 * 1024;

const broker = await runBroker('slow-consumer', 'streams:\n  - { tenant: t1, name: ticks }\n', {
  FELIX_BROKER_SUBSCRIBER_QUEUE_BYTES: String(BUDGET_BYTES),
});
const open = async () =>
  connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    token: await broker.tokenFor('t1'),
    tls: { fingerprint: broker.fingerprint },
  });
console.log(
  `broker up at ${broker.url(transport)}, ${BUDGET_BYTES / 1024 / 1024} MiB queue per subscriber`,
);

/** The record at offset n carries n (the stream is new, so the first record is offset 0). */
const recordFor = (n) => {
  const bytes = new Uint8Array(RECORD_BYTES).fill(46);
  new TextEncoder().encodeInto(`tick ${n} `, bytes);
  return bytes;
};
const offsetIn = (data) => Number(new TextDecoder().decode(data.subarray(0, 24)).split(' ')[1]);

let resume;
const resumed = new Promise((r) => {
  resume = r;
});
let stalled = false;

/** A subscriber on its own connection: what it got, what it was told it lost, its order. */
async function consumer(name, { stalls = false } = {}) {
  const felix = await open();
  const c = { name, felix, got: 0, inOrder: true, lostBefore: 0, gaps: [], seen: new Set() };
  c.statusDone = (async () => {
    for await (const s of felix.status()) if (s.type === 'gap') c.gaps.push(s);
  })();
  let expected = 0;
  c.reading = (async () => {
    for await (const ev of felix.subscribe('ticks', { from: 'earliest', shard: 0 })) {
      if (stalls && stalled) await resumed;
      c.inOrder &&= ev.offset >= expected && offsetIn(ev.data) === ev.offset;
      c.inOrder &&= ev.offset - expected === ev.lostBefore;
      c.lostBefore += ev.lostBefore;
      expected = ev.offset + 1;
      c.seen.add(ev.offset);
      c.got++;
    }
  })().catch((err) => {
    if (!c.closing) throw err;
  });
  return c;
}

const consumers = [
  await consumer('steady-1'),
  await consumer('steady-2'),
  await consumer('stalled', { stalls: true }),
];
const publisher = await open();

// The publisher: every tick, what is due at RATE_PER_S since the start, acked, never awaited
// one by one (a rate, not a round trip per record).
const acks = [];
const ackedAt = []; // ms since the start, per record, when its ack came
const started = Date.now();
let sent = 0;
while (Date.now() - started < END_AT_MS) {
  const elapsed = Date.now() - started;
  if (!stalled && elapsed >= STALL_AT_MS && elapsed < RESUME_AT_MS) {
    stalled = true;
    console.log(`${elapsed} ms: subscriber "stalled" stops reading`);
  }
  if (stalled && elapsed >= RESUME_AT_MS) {
    stalled = false;
    resume();
    console.log(`${elapsed} ms: subscriber "stalled" reads again`);
  }
  const due = Math.floor((elapsed * RATE_PER_S) / 1000);
  for (; sent < due; sent++) {
    const n = sent;
    acks.push(
      publisher.publish('ticks', recordFor(n)).then((ack) => {
        ackedAt[n] = Date.now() - started;
        return ack.offset;
      }),
    );
  }
  await new Promise((r) => setTimeout(r, TICK_MS)); // the publisher's pace, not a wait for anyone
}
const offsets = await Promise.all(acks);
const total = offsets.length;
check(
  offsets.every((o, i) => o === i),
  `all ${total} publishes were acknowledged, at offsets 0..${total - 1}`,
);

const rate = (from, to) => (ackedAt.filter((t) => t >= from && t < to).length * 1000) / (to - from);
const [before, during, after] = [
  rate(0, STALL_AT_MS),
  rate(STALL_AT_MS, RESUME_AT_MS),
  rate(RESUME_AT_MS, END_AT_MS),
];
console.log(
  `publisher: ${before.toFixed(0)}/s before the stall, ${during.toFixed(0)}/s during it, ` +
    `${after.toFixed(0)}/s after (target ${RATE_PER_S}/s, ${RECORD_BYTES} B records)`,
);
// Against the target, not the first second (which includes the connection warming up); the
// bound is loose because a loaded machine slows the publisher whatever the subscribers do.
check(
  during >= 0.75 * RATE_PER_S,
  'the publisher kept its rate while a subscriber stalled',
  `${during.toFixed(0)}/s acknowledged during the stall, target ${RATE_PER_S}/s`,
);

const told = (c) => c.gaps.reduce((n, g) => n + g.count, 0);
await waitUntil('every subscriber to account for every record', () =>
  consumers.every((c) => c.got + told(c) === total),
);
for (const c of consumers) {
  console.log(
    `${c.name.padEnd(8)}: received ${c.got}, told of ${told(c)} lost ` +
      `(${c.gaps.length} gap event(s); lostBefore ${c.lostBefore} on later records)`,
  );
}
const missing = (c) => offsets.filter((o) => !c.seen.has(o));
for (const c of consumers.slice(0, 2)) {
  check(
    c.got === total && c.inOrder && missing(c).length === 0 && c.gaps.length === 0,
    `${c.name} got every offset 0..${total - 1} once, in order, with its bytes`,
  );
}
const stalledOne = consumers[2];
const lost = missing(stalledOne);
const reported = new Set(
  stalledOne.gaps.flatMap((g) => Array.from({ length: g.count }, (_, i) => g.from + i)),
);
check(lost.length > 0, 'the stalled subscriber lost records', `${lost.length} of ${total}`);
check(
  stalledOne.inOrder && reported.size === lost.length && lost.every((o) => reported.has(o)),
  'the stalled subscriber was told exactly which offsets it lost, and got the rest in order',
  `offsets ${lost[0]}..${lost[lost.length - 1]} in ${stalledOne.gaps.length} gap event(s)`,
);

for (const c of consumers) {
  c.closing = true;
  await c.felix.close();
}
await publisher.close();
await broker.stop();
finish();
