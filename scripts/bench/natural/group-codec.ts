/**
 * The codec work of one consume-and-ack job (a `group_poll` of one record and a one-offset
 * `group_ack_batch`, and the ack's `group_acked` answer) at each end, JSON against the binary
 * group exchange (binary/group-requests.ts, flag word 0x8002), with no I/O. The poll's answer is
 * the binary `group_records` frame either way, so it is left out. The JSON requests are made as
 * the client makes them (its text made once, the request id and offsets spliced in) and read by
 * the general decoder as the broker reads them; the JSON answer is spliced as the broker splices
 * it and read by its text as the client reads it. CPU per job from process.cpuUsage; cases
 * alternate, several times, so a loaded machine disturbs both.
 *
 *   node --import tsx scripts/bench/natural/group-codec.ts [--n 200000] [--rounds 4]
 */
import { argValue } from '@felix/testing-bench-kit';
import {
  FRAME_HEADER_BYTES,
  GroupFrameReader,
  type Message,
  decodeGroupAcked,
  decodeMessage,
  encodeGroupAck,
  encodeGroupAcked,
  encodeGroupPoll,
  groupScopeBytes,
  messageJson,
  writeFrameHeader,
} from '@felix/wire';

const n = Number(argValue('--n', '200000'));
const rounds = Number(argValue('--rounds', '4'));
const where = { tenant_id: 't1', namespace: 'default', stream: 'jobs', shard: 0, group: 'round0' };
const UTF8 = new TextEncoder();
const payload = (frame: Uint8Array) => frame.subarray(FRAME_HEADER_BYTES);
let sink = 0;

/** A message's JSON text split around a field's placeholder value, as the client's templates. */
function splice(shape: Record<string, unknown>, field: string, placeholder: string) {
  const text = messageJson(shape as unknown as Message);
  const at = text.indexOf(`"${field}":${placeholder}`) + field.length + 3;
  return { head: text.slice(0, at), tail: text.slice(at + placeholder.length) };
}

function frameOf(text: string): Uint8Array {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + text.length);
  UTF8.encodeInto(text, frame.subarray(FRAME_HEADER_BYTES));
  writeFrameHeader(frame, 0, 0, text.length);
  return frame;
}

const pollText = splice(
  { type: 'group_poll', ...where, max_records: 1, wait_ms: 10_000, request_id: 0, reclaim: false },
  'request_id',
  '0',
);
const ackShape = { type: 'group_ack_batch', ...where, offsets: [0], request_id: 0 };
const ackText = messageJson(ackShape as Message);
const ackedText = splice({ type: 'group_acked', stale: [], request_id: 0 }, 'request_id', '0');
const ACKED_HEAD = UTF8.encode(ackedText.head);

const scope = groupScopeBytes('t1', 'default', 'jobs', 0, 'round0');
const ask = { maxRecords: 1, waitMs: 10_000, reclaim: false };
const reader = new GroupFrameReader();

/** The client's read of the common JSON ack answer: its head matched, the id's digits read. */
function quickAcked(p: Uint8Array): number {
  for (let i = 0; i < ACKED_HEAD.length; i++) if (p[i] !== ACKED_HEAD[i]) return -1;
  let id = 0;
  for (let i = ACKED_HEAD.length; i < p.length - 1; i++) id = id * 10 + p[i]! - 0x30;
  return id;
}

// What each end receives, made once: the timed loops read these.
const K = 1000;
const jsonPolls = Array.from({ length: K }, (_, i) =>
  frameOf(`${pollText.head}${i + 1}${pollText.tail}`),
);
const jsonAcks = Array.from({ length: K }, (_, i) =>
  frameOf(ackText.replace('"offsets":[0],"request_id":0', `"offsets":[${i}],"request_id":${i}`)),
);
const jsonAcked = Array.from({ length: K }, (_, i) =>
  frameOf(`${ackedText.head}${i}${ackedText.tail}`),
);
const binPolls = Array.from({ length: K }, (_, i) => encodeGroupPoll(scope, ask, i + 1));
const binAcks = Array.from({ length: K }, (_, i) => encodeGroupAck(scope, [i], i));
const binAcked = Array.from({ length: K }, (_, i) => encodeGroupAcked(i, []));
const ackHead = ackText.slice(0, ackText.indexOf('"offsets":') + 10);
const ackTail = ackText.slice(ackText.indexOf(',"request_id":0') + 14);

const cases: Record<string, (i: number) => void> = {
  'client, JSON': (i) => {
    sink += frameOf(`${pollText.head}${i}${pollText.tail}`).length;
    sink += frameOf(`${ackHead}[${i}],"request_id":${i}${ackTail}`).length;
    sink += quickAcked(payload(jsonAcked[i % K]!));
  },
  'client, binary': (i) => {
    sink += encodeGroupPoll(scope, ask, i).length;
    sink += encodeGroupAck(scope, [i], i).length;
    sink += decodeGroupAcked(payload(binAcked[i % K]!)).request_id;
  },
  'broker, JSON': (i) => {
    sink += (decodeMessage(payload(jsonPolls[i % K]!)) as { request_id: number }).request_id;
    const ack = decodeMessage(payload(jsonAcks[i % K]!)) as { request_id: number };
    sink += frameOf(`${ackedText.head}${ack.request_id}${ackedText.tail}`).length;
  },
  'broker, binary': (i) => {
    sink += reader.request(payload(binPolls[i % K]!)).request_id;
    const ack = reader.request(payload(binAcks[i % K]!));
    sink += encodeGroupAcked(ack.request_id, []).length;
  },
};

const results = new Map<string, number[]>();
for (let r = 0; r <= rounds; r++) {
  for (const [name, run] of Object.entries(cases)) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) run(i);
    const t = process.cpuUsage(t0);
    if (r === 0) continue; // the first round warms the JIT
    const row = results.get(name) ?? [];
    row.push((t.user + t.system) / n);
    results.set(name, row);
  }
}
for (const [name, us] of results) {
  console.log(`${name}: CPU per job ${us.map((x) => x.toFixed(2)).join(', ')} µs`);
}
if (sink === 0) console.log('');
