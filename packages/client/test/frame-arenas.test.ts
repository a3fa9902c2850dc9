// Goal: a large gathered publish frame is encoded into a reused arena, and an arena goes back to
// the pool only once the transport no longer holds the frame: reusing it earlier would change
// bytes still on their way to the broker.
// Method: a PublishPipe and StreamWriter over a real loopback stream of each transport; the
// arena pool used by the test overwrites every arena the moment it is given back (as a reuse
// would), and the server decodes every frame it received and checks every record. A second case
// uses a fake stream that never releases: its arenas must never be handed out again.
import { tempDir } from '@felix/testing-harness';
import {
  type TransportKind,
  type TransportStream,
  dial,
  listen,
  loadOrCreateDevCertificate,
} from '@felix/transport';
import { FLAG_BINARY_PUBLISH_ACKED, FrameDecoder, decodePublishBatch } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FrameStream } from '../src/protocol/frame-stream.js';
import { PublishPipe } from '../src/protocol/publish-pipe.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { StreamWriter } from '../src/protocol/stream-writer.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { FrameArenas } from '../src/util/frame-arenas.js';

/** Arenas that scribble over every arena given back and count the ones handed out again. */
class ScribblingArenas extends FrameArenas {
  private readonly given = new Set<Uint8Array>();
  reused = 0;
  override take(): Uint8Array {
    const a = super.take();
    if (this.given.has(a)) this.reused++;
    return a;
  }
  override give(arena: Uint8Array): void {
    arena.fill(0xee);
    this.given.add(arena);
    super.give(arena);
  }
}

function pipeOver(stream: TransportStream, arenas: FrameArenas): PublishPipe {
  const turn = new TurnBatcher();
  return new PublishPipe({
    server: 'test',
    tenant: 't1',
    namespace: 'default',
    frames: new FrameStream(stream),
    negotiated: { flags: FLAG_BINARY_PUBLISH_ACKED, features: 0, featuresHi: 0, window: 16 },
    table: new RequestTable(),
    writer: new StreamWriter(stream, turn, () => undefined),
    turn,
    arenas,
  });
}

/** Record `i`: 1 KiB, its index in the first four bytes, the rest its index's low byte. */
function record(i: number): Uint8Array {
  const r = new Uint8Array(1024).fill(i & 0xff);
  new DataView(r.buffer).setUint32(0, i);
  return r;
}

function intact(r: Uint8Array, i: number): boolean {
  if (r.byteLength !== 1024 || new DataView(r.buffer, r.byteOffset).getUint32(0) !== i)
    return false;
  for (let k = 4; k < r.byteLength; k++) if (r[k] !== (i & 0xff)) return false;
  return true;
}

async function devMaterial() {
  const dir = await tempDir('felix-arenas-');
  try {
    return await loadOrCreateDevCertificate(dir.path);
  } finally {
    await dir.cleanup();
  }
}

const PER_TURN = 200; // 200 KiB of records: past FRAME_ARENA_RECORD_BYTES_MIN, one frame a turn
/** Records per turn: small turns (one frame each), then bursts of 1 MiB frames that wait for
 *  the stream's credit and leave in pieces. */
const TURNS = [...Array<number>(24).fill(PER_TURN), 4000, 4000, 4000];
const RECORDS = TURNS.reduce((a, b) => a + b, 0);

describe('frame arenas', () => {
  it('a_frame_arena_is_reused_only_after_the_transport_is_done_with_it', async () => {
    for (const transport of ['tls', 'quic'] as TransportKind[]) await arenasOver(transport);
  });

  it('a_frame_arena_the_transport_still_holds_is_not_handed_out_again', async () => {
    const writes: Uint8Array[] = [];
    const fake = {
      // Accepts every write and never says it is done with one.
      write: async (b: Uint8Array) => {
        writes.push(b);
      },
      [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }),
    };
    const arenas = new ScribblingArenas(undefined, 4);
    const pipe = pipeOver(fake as unknown as TransportStream, arenas);
    for (let t = 0; t < 6; t++) {
      const sent: Promise<unknown>[] = [];
      for (let i = 0; i < PER_TURN; i++) {
        sent.push(pipe.publish('s', [record(i)], { ack: false, gather: true, timeoutMs: 30_000 }));
      }
      await Promise.all(sent);
    }
    expect(writes).toHaveLength(6);
    expect(new Set(writes.map((w) => w.buffer)).size).toBe(6);
    expect(arenas.reused).toBe(0);
    expect(arenas.kept).toBe(0);
  });
});

async function arenasOver(transport: TransportKind): Promise<void> {
  const tls = await devMaterial();
  const listener = await listen({ transport, host: '127.0.0.1', port: 0, tls });
  const conn = await dial(`${transport}://127.0.0.1:${listener.port}`, {
    fingerprint: tls.fingerprint,
  });
  try {
    const received = (async () => {
      for await (const server of listener.connections()) {
        for await (const s of server.incoming()) {
          const d = new FrameDecoder();
          const records: Uint8Array[] = [];
          for await (const chunk of s) {
            for (const f of d.push(chunk)) {
              records.push(...decodePublishBatch(f.flags, f.payload).payloads);
              if (records.length === RECORDS) return records;
            }
          }
          return records;
        }
      }
      return [];
    })();
    const stream = await conn.openBidi();
    const arenas = new ScribblingArenas(undefined, 2);
    const pipe = pipeOver(stream, arenas);
    let next = 0;
    for (const n of TURNS) {
      const sent: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        const call = { ack: false, gather: true, timeoutMs: 30_000 };
        sent.push(pipe.publish('s', [record(next++)], call));
      }
      await Promise.all(sent);
    }
    const records = await received;
    expect(records).toHaveLength(RECORDS);
    expect(records.every((r, i) => intact(r, i))).toBe(true);
    // The pool did its job: frames after the first few were encoded into released arenas.
    expect(arenas.reused).toBeGreaterThan(0);
  } finally {
    await conn.close();
    await listener.close();
  }
}
