/**
 * Per-request counts for one process (loaded with `node --import`): turn hops (nextTick,
 * queueMicrotask, setImmediate, timers), promises made, socket writes and their bytes, buffers
 * allocated, bytes copied with TypedArray#set, JSON and TextEncoder/TextDecoder calls. Counting
 * slows the process: read the counts, never the times, of a counted run. On SIGUSR2 the process
 * writes its counts so far to `$FELIX_COUNT_DIR/<pid>.json` (counts.ts reads them).
 */
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';

const c = Object.create(null);
const bump = (k, n = 1) => {
  c[k] = (c[k] ?? 0) + n;
};
const wrap = (obj, name, key, extra) => {
  const orig = obj[name];
  obj[name] = function (...args) {
    bump(key);
    if (extra) extra(args, this);
    return orig.apply(this, args);
  };
};
wrap(process, 'nextTick', 'nextTick');
wrap(globalThis, 'queueMicrotask', 'queueMicrotask');
wrap(globalThis, 'setImmediate', 'setImmediate');
wrap(globalThis, 'setTimeout', 'setTimeout');
wrap(JSON, 'parse', 'JSON.parse');
wrap(JSON, 'stringify', 'JSON.stringify');
wrap(TextEncoder.prototype, 'encode', 'TextEncoder.encode');
wrap(TextEncoder.prototype, 'encodeInto', 'TextEncoder.encodeInto');
wrap(TextDecoder.prototype, 'decode', 'TextDecoder.decode');
for (const m of ['alloc', 'allocUnsafe', 'allocUnsafeSlow']) wrap(Buffer, m, `Buffer.${m}`);
wrap(Buffer, 'concat', 'Buffer.concat');
const typed = Object.getPrototypeOf(Uint8Array.prototype);
wrap(typed, 'set', 'TypedArray#set', (args) => bump('bytes copied by #set', args[0]?.length ?? 0));
wrap(typed, 'slice', 'TypedArray#slice');
wrap(Socket.prototype, 'write', 'socket.write', (args) =>
  bump('socket bytes written', args[0]?.length ?? 0),
);
wrap(Socket.prototype, 'cork', 'socket.cork');
createHook({
  init(_id, type) {
    if (type === 'PROMISE') bump('promises');
  },
}).enable();

process.on('SIGUSR2', () => {
  const dir = process.env.FELIX_COUNT_DIR ?? '/tmp';
  writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(c));
});
