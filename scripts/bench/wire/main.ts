// Wire codec benchmark: encode + decode of 64 x 1 KiB publish batches and shared event
// batches, side by side in one run with (a) our JSON message path, (b) plain
// JSON.stringify/parse of the same content with base64 payloads, and (c) a plain copy of
// the same bytes (the memory-bandwidth limit). Reports MB/s of payload bytes and frames/s.
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/wire/main.ts [--seconds 1]
// Imports @felix/wire's public entry (its dist): a src/ newer than the build stops the run.
import {
  decodeEventBatch,
  decodeEventBatchPieces,
  decodeFrame,
  decodeMessage,
  decodePublishBatch,
  encodeEventBatch,
  encodeMessage,
  encodePublishBatch,
} from '@felix/wire';
import { assertFreshBuild, markdownTable } from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/wire'));

const BATCH = 64;
const RECORD_BYTES = 1024;
const PAYLOAD_BYTES = BATCH * RECORD_BYTES;
const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1;

const payloads = Array.from({ length: BATCH }, (_, i) => {
  const p = new Uint8Array(RECORD_BYTES);
  for (let j = 0; j < p.length; j++) p[j] = (i * 31 + j * 7) & 0xff;
  return p;
});
const scope = { tenantId: 'acme', namespace: 'default', stream: 'orders' };
/** Node's TLS read size: the chunks a socket hands over are at most this. */
const SOCKET_CHUNK_BYTES = 16 * 1024;
/** Each frame's payload cut into socket-sized chunks once, outside the timed decode. */
const socketChunks = new WeakMap<Uint8Array, Uint8Array[]>();
let sink = 0;

interface Case {
  name: string;
  encode: () => Uint8Array;
  decode: (frame: Uint8Array) => number;
}

const ROUNDS = 5;

/** Ops per second of `fn` over `ms` milliseconds. */
function rate(fn: () => void, ms: number): number {
  let ops = 0;
  const start = performance.now();
  const deadline = start + ms;
  while (performance.now() < deadline) {
    for (let i = 0; i < 20; i++) fn();
    ops += 20;
  }
  return ops / ((performance.now() - start) / 1000);
}

/** A table row: the case, MB/s of payload bytes, frames per second. */
function row(name: string, opsPerSecond: number): string[] {
  const mbs = (opsPerSecond * PAYLOAD_BYTES) / 1e6;
  return [name, mbs.toFixed(0), opsPerSecond.toFixed(0)];
}

const b64 = (p: Uint8Array) => Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('base64');
const unb64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));
const te = new TextEncoder();
const td = new TextDecoder();

const cases: Case[] = [
  {
    name: 'binary publish batch (0x0049 acked+keyed)',
    encode: () =>
      encodePublishBatch({
        ...scope,
        payloads,
        key: te.encode('k1'),
        requestId: 7,
        ackMode: 'per_batch',
      }),
    decode: (frame) => {
      const { flags, payload } = decodeFrame(frame);
      return decodePublishBatch(flags, payload).payloads.length;
    },
  },
  {
    name: 'binary shared event batch (0x0024 offsets)',
    encode: () => encodeEventBatch({ baseOffset: 1_000_000, payloads }),
    decode: (frame) => {
      const { flags, payload } = decodeFrame(frame);
      return decodeEventBatch(flags, payload).payloads.length;
    },
  },
  {
    // The client's path: a subscription's bytes arrive in chunks of up to 16 KiB (one TLS read
    // each, handed on by the mux as plain Uint8Arrays) and the batch is decoded from them in
    // place, one view per record, a copy only for a record cut by a chunk's end.
    name: 'shared event batch from 16 KiB chunks',
    encode: () => encodeEventBatch({ baseOffset: 1_000_000, payloads }),
    decode: (frame) => {
      let pieces = socketChunks.get(frame);
      if (pieces === undefined) {
        // Views of the frame's own memory (no copy), as the mux would have handed them.
        const { payload } = decodeFrame(frame);
        const whole = new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
        pieces = [];
        for (let at = 0; at < whole.length; at += SOCKET_CHUNK_BYTES)
          pieces.push(whole.subarray(at, at + SOCKET_CHUNK_BYTES));
        socketChunks.set(frame, pieces);
      }
      const flags = decodeFrame(frame).flags;
      return decodeEventBatchPieces(flags, pieces, PAYLOAD_BYTES + 12 + BATCH * 4).payloads.length;
    },
  },
  {
    name: 'JSON publish_batch via @felix/wire',
    encode: () =>
      encodeMessage({
        type: 'publish_batch',
        tenant_id: 'acme',
        namespace: 'default',
        stream: 'orders',
        payloads,
        request_id: 7,
        ack: 'per_batch',
      }),
    decode: (frame) => {
      const m = decodeMessage(decodeFrame(frame).payload);
      return m.type === 'publish_batch' ? m.payloads.length : 0;
    },
  },
  {
    name: 'JSON.stringify/parse, base64 payloads',
    encode: () =>
      te.encode(
        JSON.stringify({
          type: 'publish_batch',
          tenant_id: 'acme',
          namespace: 'default',
          stream: 'orders',
          payloads: payloads.map(b64),
          request_id: 7,
        }),
      ),
    decode: (bytes) => (JSON.parse(td.decode(bytes)).payloads as string[]).map(unb64).length,
  },
  {
    name: 'plain copy of the same bytes',
    encode: () => {
      const out = new Uint8Array(PAYLOAD_BYTES);
      for (let i = 0; i < BATCH; i++) out.set(payloads[i]!, i * RECORD_BYTES);
      return out;
    },
    decode: (bytes) => bytes.slice().length,
  },
];

console.log(
  `wire codec: ${BATCH} x ${RECORD_BYTES} B per batch, ${SECONDS}s per measurement, node ${process.version}`,
);
console.log('MB/s counts payload bytes (64 KiB per batch); frames/s = batches per second;');
console.log(`each figure is the best of ${ROUNDS} interleaved rounds.\n`);
// Rounds interleave every case, and each figure is the best of its rounds: the machine is
// shared, so the fastest round is the least disturbed, and interleaving spreads any
// disturbance over all cases alike rather than penalising whichever ran during it.
type Op = 'enc' | 'dec' | 'both';
const results: Record<string, Record<Op, number>> = {};
const ops = cases.map((c) => {
  const frame = c.encode();
  const fns: Record<Op, () => void> = {
    enc: () => {
      sink += c.encode().length;
    },
    dec: () => {
      sink += c.decode(frame);
    },
    both: () => {
      sink += c.decode(c.encode());
    },
  };
  for (const fn of Object.values(fns)) rate(fn, 300); // warm up the JIT and settle the heap
  results[c.name] = { enc: 0, dec: 0, both: 0 };
  return { name: c.name, fns };
});
for (let round = 0; round < ROUNDS; round++) {
  for (const { name, fns } of ops) {
    for (const op of ['enc', 'dec', 'both'] as const) {
      const r = results[name]!;
      r[op] = Math.max(r[op], rate(fns[op], (SECONDS * 1000) / ROUNDS));
    }
  }
}
const table: string[][] = [];
for (const { name } of ops) {
  const r = results[name]!;
  table.push(row(`${name}: encode`, r.enc));
  table.push(row(`${name}: decode`, r.dec));
  table.push(row(`${name}: encode+decode`, r.both));
}
console.log(
  markdownTable(
    ['case', { title: 'MB/s', align: 'right' }, { title: 'frames/s', align: 'right' }],
    table,
    { aligned: true },
  ),
);
const copy = results['plain copy of the same bytes']!;
const bin = results['binary publish batch (0x0049 acked+keyed)']!;
const ev = results['binary shared event batch (0x0024 offsets)']!;
console.log(`\nbinary publish decode / copy decode: ${((bin.dec / copy.dec) * 100).toFixed(0)} %`);
console.log(`binary event decode / copy decode:   ${((ev.dec / copy.dec) * 100).toFixed(0)} %`);
console.log(`binary publish encode+decode / copy: ${((bin.both / copy.both) * 100).toFixed(0)} %`);
if (sink === 0) console.log('(sink)');
