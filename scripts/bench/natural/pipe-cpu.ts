/**
 * The client's CPU per record for the fire-and-forget loop alone, no broker and no TLS: a
 * PublishPipe and StreamWriter over a stand-in transport stream that takes each write a
 * macrotask later and then releases it (as the TLS transport does once the socket wrote it).
 * `process.cpuUsage()` around each round, so a loaded machine disturbs it less than a rate.
 *
 *   node --import tsx scripts/bench/natural/pipe-cpu.ts <repo root> burst|turns
 *
 * `burst`: 100,000 `publish(..., { ack: false })` in one turn, awaited at the end (the natural
 * row's loop); `turns`: 100 turns of 1,000, each awaited (a loop that keeps publishing, where
 * frame arenas come back between turns). `<repo root>` is this checkout or a copy of another
 * build, for A/B (the client's sources are imported from there).
 */
const root = process.argv[2] ?? '.';
const mode = process.argv[3] ?? 'burst';
const at = (m: string) => `${root}/packages/client/src/protocol/${m}.ts`;
const { PublishPipe } = await import(at('publish-pipe'));
const { StreamWriter } = await import(at('stream-writer'));
const { TurnBatcher } = await import(at('turn-batcher'));
const { RequestTable } = await import(at('request-table'));
const { FrameStream } = await import(at('frame-stream'));

let sink = 0;
const stream = {
  write(b: Uint8Array, released?: () => void): Promise<void> {
    return new Promise((resolve) =>
      setImmediate(() => {
        sink += b[b.length - 1]!;
        released?.();
        resolve();
      }),
    );
  },
  [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }),
};
const turn = new TurnBatcher();
const pipe = new PublishPipe({
  ...{ server: 'stand-in', tenant: 't1', namespace: 'default', turn },
  frames: new FrameStream(stream as never),
  negotiated: { flags: 0x0008, features: 0, featuresHi: 0, window: 256 },
  table: new RequestTable(),
  writer: new StreamWriter(stream as never, turn, () => undefined),
});
const DATA = new Uint8Array(1024).fill(7);
const CALL = { ack: false, gather: true, timeoutMs: 30_000 };

async function publishTurn(n: number): Promise<void> {
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) sent.push(pipe.publish('natural', [DATA], CALL));
  await Promise.all(sent);
}

async function round(): Promise<number> {
  const c0 = process.cpuUsage();
  if (mode === 'burst') await publishTurn(100_000);
  else for (let t = 0; t < 100; t++) await publishTurn(1000);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 100_000;
}

const rounds: string[] = [];
for (let r = 0; r < 8; r++) rounds.push((await round()).toFixed(2));
console.log(`${mode}: client CPU µs per record, rounds 1-8: ${rounds.join(' ')} (${sink > 0})`);
