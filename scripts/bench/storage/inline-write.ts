// Where a group write belongs: on the calling thread (a synchronous pwrite into the page cache)
// or on libuv's thread pool (an async pwrite: the same copy plus a hand-off to a pool thread
// and a wakeup of the event loop when it is done). The segment log writes a group inline up
// to WRITE_INLINE_BYTES_MAX (packages/storage/src/limits.ts); this prints both costs per size
// so that bound can be checked on a machine. Writes overwrite a region written and synced
// first, as the log's preallocated segment does, with a sync every 20 writes.
// Run: npx pnpm@10.34.9 exec tsx scripts/bench/storage/inline-write.ts [--dir <parent>]
//   [--writes 400]
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { argValue, percentile } from '@felix/testing-bench-kit';

const parent = argValue('--dir', tmpdir());
const writes = Number(argValue('--writes', '400'));
const REGION_BYTES = 64 * 1024 * 1024;
const SIZES_KIB = [16, 64, 128, 256, 512, 1024];

const dir = await mkdtemp(join(parent, 'felix-inline-write-'));
const path = join(dir, 'region.bin');
try {
  const fd = openSync(path, 'w+');
  const zeros = new Uint8Array(REGION_BYTES);
  writeSync(fd, zeros, 0, zeros.length, 0);
  fdatasyncSync(fd);
  closeSync(fd);
  const file = await open(path, 'r+');
  console.log('| group | inline p50 (µs) | inline p90 | pool p50 (µs) | pool p90 |');
  console.log('| ---: | ---: | ---: | ---: | ---: |');
  for (const kib of SIZES_KIB) {
    const buf = new Uint8Array(kib * 1024).fill(97);
    const inline: number[] = [];
    const pool: number[] = [];
    let pos = 0;
    for (let i = 0; i < writes; i++) {
      const t0 = performance.now();
      if (i % 2 === 0) writeSync(file.fd, buf, 0, buf.length, pos);
      else await file.write(buf, 0, buf.length, pos);
      (i % 2 === 0 ? inline : pool).push((performance.now() - t0) * 1000);
      pos = (pos + buf.length) % (REGION_BYTES - buf.length);
      if (i % 20 === 19) await file.datasync();
    }
    inline.sort((a, b) => a - b);
    pool.sort((a, b) => a - b);
    const cells = [inline, pool].flatMap((t) => [percentile(t, 50), percentile(t, 90)]);
    console.log(`| ${kib} KiB | ${cells.map((c) => c.toFixed(0)).join(' | ')} |`);
  }
  await file.close();
  console.log(`\nload average ${loadavg()[0]!.toFixed(2)}, ${writes} writes per size`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
