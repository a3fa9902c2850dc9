// queue-semantics: a consumer group on a durable stream, shown one rule at a time. Each step
// prints what it does and what the broker answered: claims, a claim lapsing, nack, owed records
// going first, the attempt bound turning a poison record into a dead letter, redrive, the cursor
// waiting for a gap, describe, and a named consumer reclaiming its claims after a restart. The broker runs with a 3-attempt bound to keep it short.
// Environment: FELIX_TRANSPORT (quic | tls, default quic).
import { StaleClaimError, connect } from '@felix/client';
import { check, finish, runBroker } from '@felix/demo-support';

const transport = process.env.FELIX_TRANSPORT === 'tls' ? 'tls' : 'quic';
const broker = await runBroker(
  'queue-semantics',
  'streams:\n  - { tenant: t1, name: jobs, durable: true, fsync: onCommit }\n',
  { FELIX_GROUP_MAX_ATTEMPTS: '3' },
);
const felix = await connect({
  servers: [broker.url(transport)],
  tenant: 't1',
  token: await broker.tokenFor('t1'),
  tls: { fingerprint: broker.fingerprint },
});
const text = (b) => new TextDecoder().decode(b);
const show = (msgs) =>
  msgs.length === 0
    ? '(nothing)'
    : msgs.map((m) => `${text(m.payload)}@${m.offset} try ${m.attempts}`).join(', ');
let step = 0;
const say = (what) => console.log(`\n${++step}. ${what}`);

const group = felix.group('jobs', 'workers', { shard: 0 });
for (const job of ['resize', 'email']) await felix.publish('jobs', job);

say('A poll claims records; they are not handed out again while the claim stands.');
// 1 s: B's poll below lands well inside the claim even on a busy machine.
const a = await group.poll({ max: 2, waitMs: 1000, visibilityMs: 1000 });
console.log('   consumer A got:', show(a));
const none = await group.poll({ max: 2, waitMs: 0 });
console.log('   consumer B got:', show(none));
check(a.length === 2 && none.length === 0, 'claimed records are not handed out twice');

say(
  'A claims for 1 s and goes quiet: its claims lapse and the records are owed to the next poller.',
);
await felix.publish('jobs', 'invoice');
await new Promise((r) => setTimeout(r, 1200)); // let A's 1 s claims lapse: time is what this shows
const b = await group.poll({ max: 3, waitMs: 2000 });
console.log('   consumer B got:', show(b), '(owed records first, then new ones)');
check(
  show(b) === 'resize@0 try 2, email@1 try 2, invoice@2 try 1',
  'lapsed claims are owed to the next poller, before new records',
);
let stale = false;
try {
  await a[0].nack();
} catch (err) {
  stale = err instanceof StaleClaimError;
  console.log(`   A's late nack is refused: ${stale ? 'stale_claim' : err}`);
}
check(stale, "a lapsed claim's late nack is refused as stale");

say('The cursor moves only over a contiguous run of acks.');
const [resize, email, invoice] = b;
await email.ack();
await invoice.ack();
const waiting = (await group.describe()).committed;
console.log('   acked email and invoice, resize still out; committed =', waiting);
await resize.ack();
const moved = (await group.describe()).committed;
console.log('   acked resize; committed =', moved);
check(waiting === 0 && moved === 3, 'the cursor waits for the gap, then moves over the whole run');

say('A nacked record is owed again at once, before anything new.');
await felix.publish('jobs', 'poison');
await felix.publish('jobs', 'report');
let [poison] = await group.poll({ max: 1, waitMs: 1000 });
await poison.nack();
const again = await group.poll({ max: 2, waitMs: 1000 });
console.log('   after the nack:', show(again));
check(
  show(again) === 'poison@3 try 2, report@4 try 1',
  'a nacked record is owed again at once, before anything new',
);
await again[1].ack(); // report is fine
poison = again[0];

say('A poison record is given up on after the attempt bound (3 here) and becomes a dead letter.');
await poison.nack();
const third = await group.poll({ max: 1, waitMs: 1000 });
console.log('   third try:', show(third));
await third[0].nack();
const after = await group.poll({ max: 1, waitMs: 300 });
console.log('   next poll:', show(after));
const dead = await group.deadLetters();
console.log('   dead letters:', dead, '| describe:', await group.describe());
check(
  show(third) === 'poison@3 try 3' && after.length === 0 && dead.length === 1,
  'after the attempt bound a poison record becomes a dead letter',
);

say(
  'Redrive hands a dead letter out again with its attempts starting over (recorded durably first).',
);
await group.redrive(dead[0]);
const redriven = await group.poll({ max: 1, waitMs: 1000 });
console.log('   redriven:', show(redriven));
await redriven[0].ack();
const deadAfter = await group.deadLetters();
console.log('   acked; dead letters now:', deadAfter);
check(
  show(redriven) === 'poison@3 try 1' && deadAfter.length === 0,
  'redrive hands a dead letter out again with its attempts starting over',
);

say('A consumer that needs longer extends its claim; deadLetter() gives up on purpose.');
await felix.publish('jobs', 'slow');
const [slow] = await group.poll({ max: 1, waitMs: 1000, visibilityMs: 1000 });
console.log(`   extended ${text(slow.payload)} by`, await slow.extend(60_000), 'ms');
await slow.deadLetter();
const given = await group.deadLetters();
console.log('   dead letters:', given, '| describe:', await group.describe());
check(given.length === 1, 'deadLetter() gives a record up on purpose');

say('A named consumer that restarts gets its own claims back at once, not after their timeout.');
const worker = felix.group('jobs', 'workers', { shard: 0, consumer: 'worker-7' });
await felix.publish('jobs', 'thumbnail');
await felix.publish('jobs', 'digest');
const held = await worker.poll({ max: 2, waitMs: 1000, visibilityMs: 60_000 });
console.log('   worker-7 got:', show(held), '(claimed for 60 s), then its process dies');
const restarted = await connect({
  servers: [broker.url(transport)],
  tenant: 't1',
  token: await broker.tokenFor('t1'),
  tls: { fingerprint: broker.fingerprint },
});
const reborn = restarted.group('jobs', 'workers', { shard: 0, consumer: 'worker-7' });
const back = await reborn.poll({ max: 2, waitMs: 0 });
console.log('   worker-7 on a new connection reclaims:', show(back));
check(
  show(back) === show(held).replaceAll('try 1', 'try 2') && back.length === 2,
  'a named consumer gets its own claims back at once after a restart',
);
await Promise.all(back.map((m) => m.ack()));
console.log('   acked; describe:', await reborn.describe());
await restarted.close();

await felix.close();
await broker.stop();
finish();
