// Goal: a consume() loop riding through graceful broker restarts (SIGTERM) finishes every job,
// and neither the loop nor its acks meet an unknown outcome: a stopping broker answers what it
// read and ends its streams (services/broker/src/session/stream-finish.ts), so a settle it did
// not apply is known as such. Method: one durable felix-broker process over each transport, 600
// jobs published, one consumer acking each job it gets while the broker is stopped with SIGTERM
// and started again (same data dir) three times; every job must be acked at least once, and no
// ack may end OutcomeUnknownError.
import { OutcomeUnknownError } from '@felix/client';
import { tempDir, waitFor } from '@felix/testing-harness';
import { expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '../src/index.js';
import { PROJECTIONS_YAML, TRANSPORTS, client, restartedWithSigterm } from './support.js';

const JOBS = 600;

it('a_consumer_riding_through_sigterm_restarts_finishes_every_job_and_meets_no_unknown_outcome', async () => {
  for (const transport of TRANSPORTS) {
    const dir = await tempDir();
    const spec = { yaml: PROJECTIONS_YAML, dir: dir.path, durable: true };
    let broker: BrokerProcess = await startBroker(spec);
    const felix = await client(broker, transport);
    const done = new Set<string>();
    const unknown: unknown[] = [];
    const ac = new AbortController();
    try {
      const group = felix.group('jobs', `gs-${transport}`, { shard: 0 });
      await group.seek('earliest');
      await felix.publishBatch(
        'jobs',
        Array.from({ length: JOBS }, (_, i) => `job-${i}`),
      );
      const loop = (async () => {
        for await (const m of group.consume({ signal: ac.signal })) {
          try {
            await m.ack();
            done.add(new TextDecoder().decode(m.payload));
          } catch (err) {
            if (err instanceof OutcomeUnknownError) unknown.push(err);
          }
        }
      })();
      for (let round = 1; round <= 3; round++) {
        await waitFor(() => done.size >= (JOBS * round) / 4, `${(JOBS * round) / 4} jobs done`);
        broker = await restartedWithSigterm(broker, spec);
      }
      await waitFor(() => done.size >= JOBS, 'every job done');
      ac.abort();
      await loop;
      expect({ transport, unknown: unknown.map(String) }).toEqual({ transport, unknown: [] });
    } finally {
      ac.abort();
      await felix.close();
      await broker.stop();
      await dir.cleanup();
    }
  }
}, 240_000);
