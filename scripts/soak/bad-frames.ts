/**
 * Bad frames on raw connections (the transport, no client): each cycle opens one connection
 * and four streams carrying a wrong magic, a pre-auth header larger than the pre-auth bound, a
 * pre-auth frame cut short, and after a valid `auth` a publish frame cut short; holds them for
 * a moment, then closes. Every one of them must cost the broker nothing once it is gone.
 */
import { type Connection, dial } from '@felix/transport';
import type { BenchBroker } from '@felix/testing-bench-kit';
import { FRAME_HEADER_BYTES, PREAUTH_FRAME_PAYLOAD_BYTES_MAX, encodeMessage } from '@felix/wire';
import type { TransportName } from './churn.js';

export interface BadFrameOptions {
  transports: TransportName[];
  tenant: string;
  until: number;
  concurrency: number;
  /** Bytes the cut-short authenticated frame announces; half of them are sent. */
  partialBytes: number;
  holdMs: number;
}

const MAGIC = 0x464c5831; // "FLX1"
const BINARY_PUBLISH_BATCH = 0x0001;

function header(flags: number, length: number, magic = MAGIC): Uint8Array {
  const h = new Uint8Array(FRAME_HEADER_BYTES);
  const v = new DataView(h.buffer);
  v.setUint32(0, magic);
  v.setUint16(4, 1);
  v.setUint16(6, flags);
  v.setUint32(8, length);
  return h;
}

/** Writes `chunks` on a new stream; a broker that already refused the stream is fine. */
async function stream(conn: Connection, chunks: Uint8Array[]): Promise<void> {
  try {
    const s = await conn.openBidi();
    for (const c of chunks) await s.write(c);
  } catch {
    // refused or reset by the broker: the point of the exercise
  }
}

async function cycle(broker: BenchBroker, t: TransportName, o: BadFrameOptions): Promise<void> {
  const conn = await dial(broker.url(t), { fingerprint: broker.fingerprint });
  const auth = encodeMessage({ type: 'auth', tenant_id: o.tenant, token: '' });
  await Promise.all([
    stream(conn, [header(0, 16, 0xdeadbeef), new Uint8Array(16)]),
    stream(conn, [header(0, PREAUTH_FRAME_PAYLOAD_BYTES_MAX + 1), new Uint8Array(1024)]),
    stream(conn, [header(0, 32 * 1024), new Uint8Array(16 * 1024).fill(0x20)]),
    stream(conn, [
      auth,
      header(BINARY_PUBLISH_BATCH, o.partialBytes),
      new Uint8Array(o.partialBytes / 2),
    ]),
  ]);
  await new Promise((r) => setTimeout(r, o.holdMs)); // the broker holds the partial frames meanwhile
  await conn.close();
}

/** Runs the phase; answers the cycles completed. */
export async function badFrames(broker: BenchBroker, o: BadFrameOptions): Promise<number> {
  let done = 0;
  const worker = async (w: number) => {
    while (Date.now() < o.until) {
      await cycle(broker, o.transports[(done + w) % o.transports.length]!, o);
      done++;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w)));
  return done;
}
