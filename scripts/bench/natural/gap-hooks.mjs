/**
 * Where one awaited round trip's wall time goes in one process (loaded with `node --import`):
 * p50 and mean of (a) plaintext read → the next `net.Socket#write` call (this process's own
 * work on the path: decode, handle, encode), (b) the `write` call itself (encryption, the
 * loopback send, and any time the woken peer held this CPU), (c) the end of that write → the
 * next plaintext read (the peer's share and the wake-ups). The plaintext read is the `onread`
 * callback Felix's TLS transport installs (read-feed.ts), found by Node's slot name, or a
 * socket's `push` for a peer that reads through 'data' (ioredis, the floor's child).
 *
 *   FELIX_BENCH_BROKER_ARGS="--import ./scripts/bench/natural/gap-hooks.mjs" \
 *     node --import ./scripts/bench/natural/gap-hooks.mjs --import tsx \
 *     scripts/bench/natural/loop.ts --row get --n 40000 [--side 3]
 *
 * Each process writes `$FELIX_GAP_DIR/gaps-<pid>.json` (default /tmp) when it exits; the first
 * GAP_SKIP samples (set-up writes) are left out. Wall times on a loaded machine include
 * preemption: compare processes of one run, and read (b) as "until this process ran again".
 */
import { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import tls from 'node:tls';

const SAMPLES_MAX = 1 << 20;
const GAP_SKIP = 3000;
const readToWrite = new Float64Array(SAMPLES_MAX);
const writeCall = new Float64Array(SAMPLES_MAX);
const writeToRead = new Float64Array(SAMPLES_MAX);
const count = { readToWrite: 0, writeCall: 0, writeToRead: 0 };
let lastRead = -1;
let lastWriteEnd = -1;

function onPlaintext() {
  const t = performance.now();
  if (lastWriteEnd >= 0 && count.writeToRead < SAMPLES_MAX) {
    writeToRead[count.writeToRead++] = t - lastWriteEnd;
  }
  lastWriteEnd = -1;
  lastRead = t;
}

const write = Socket.prototype.write;
Socket.prototype.write = function (...args) {
  const t = performance.now();
  if (lastRead >= 0 && count.readToWrite < SAMPLES_MAX)
    readToWrite[count.readToWrite++] = t - lastRead;
  lastRead = -1;
  const r = write.apply(this, args);
  lastWriteEnd = performance.now();
  if (count.writeCall < SAMPLES_MAX) writeCall[count.writeCall++] = lastWriteEnd - t;
  return r;
};

/** Wraps the socket's `onread` callback (Node keeps it in an own slot named kBufferCb). */
function wrapOnread(socket) {
  const slot = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'kBufferCb');
  const callback = slot === undefined ? undefined : socket[slot];
  if (typeof callback !== 'function' || callback.gapHooked) return false;
  const hooked = function (...args) {
    onPlaintext();
    return callback.apply(this, args);
  };
  hooked.gapHooked = true;
  socket[slot] = hooked;
  return true;
}

// A dialed socket has its onread from the start; an accepted one once Felix's listener set it.
const connect = tls.connect;
tls.connect = function (...args) {
  const socket = connect.apply(this, args);
  wrapOnread(socket);
  return socket;
};
const emit = tls.Server.prototype.emit;
tls.Server.prototype.emit = function (event, ...args) {
  const r = emit.call(this, event, ...args);
  if (event === 'secureConnection') wrapOnread(args[0]);
  return r;
};
// Modules that imported `connect` by name see the wrapper too.
syncBuiltinESMExports();
// Sockets without onread hand their plaintext to `push` ('data' listeners).
const push = Readable.prototype.push;
Readable.prototype.push = function (chunk, encoding) {
  if (this instanceof Socket && chunk !== null && chunk !== undefined) onPlaintext();
  return push.call(this, chunk, encoding);
};

function summary(values, n) {
  const kept = Array.from(values.subarray(Math.min(GAP_SKIP, n), n)).sort((a, b) => a - b);
  if (kept.length === 0) return null;
  const micros = (ms) => Math.round(ms * 10_000) / 10;
  const mean = kept.reduce((s, v) => s + v, 0) / kept.length;
  return { n: kept.length, p50: micros(kept[kept.length >> 1]), mean: micros(mean) };
}

process.on('exit', () => {
  const dir = process.env.FELIX_GAP_DIR ?? '/tmp';
  const out = {
    process: process.argv.slice(1, 2).join(' '),
    readToWriteUs: summary(readToWrite, count.readToWrite),
    writeCallUs: summary(writeCall, count.writeCall),
    writeToReadUs: summary(writeToRead, count.writeToRead),
  };
  writeFileSync(join(dir, `gaps-${process.pid}.json`), `${JSON.stringify(out)}\n`);
});
