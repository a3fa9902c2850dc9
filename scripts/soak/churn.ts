/**
 * Connection churn as a client writes it: connect (which authenticates), one acknowledged
 * publish, close; `concurrency` such loops at once.
 */
import { connect } from '@felix/client';
import type { BenchBroker } from '@felix/testing-bench-kit';

export type TransportName = 'tls' | 'quic';

export interface ChurnOptions {
  transport: TransportName;
  stream: string;
  tenant: string;
  /** Stop after this many cycles, or when `until` passes, whichever is first. */
  cycles: number;
  until?: number;
  concurrency: number;
}

const record = new Uint8Array(100).fill(1);

/** One cycle: connect, a publish the broker acknowledges, close. */
async function cycle(broker: BenchBroker, o: ChurnOptions): Promise<void> {
  const client = await connect({
    servers: [broker.url(o.transport)],
    tenant: o.tenant,
    tls: { fingerprint: broker.fingerprint },
    reconnect: { attemptsMax: 0 },
  });
  try {
    await client.publish(o.stream, record);
  } finally {
    await client.close();
  }
}

/** Runs the churn; answers how many cycles completed. */
export async function churn(broker: BenchBroker, o: ChurnOptions): Promise<number> {
  let started = 0;
  let done = 0;
  const more = () => started < o.cycles && (o.until === undefined || Date.now() < o.until);
  const worker = async () => {
    while (more()) {
      started++;
      await cycle(broker, o);
      done++;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return done;
}
