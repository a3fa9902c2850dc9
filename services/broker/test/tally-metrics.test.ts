import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TallyCounter, TallyHistogram } from '../src/util/tally-metrics.js';

const BOUNDS = [0.00005, 0.001, 0.25, 1];
const FRAMES = ['json', 'binary'];
const DURABLE = ['false', 'true'];

function pair() {
  const tally = new Registry();
  const prom = new Registry();
  const metrics = {
    tally: {
      batches: new TallyCounter('t_batches_total', 'Batches', tally, {
        name: 'frame',
        values: FRAMES,
      }),
      records: new TallyCounter('t_records_total', 'Records', tally),
      latency: new TallyHistogram('t_seconds', 'Latency', BOUNDS, tally, {
        name: 'durable',
        values: DURABLE,
      }),
    },
    prom: {
      batches: new Counter({
        name: 't_batches_total',
        help: 'Batches',
        labelNames: ['frame'],
        registers: [prom],
      }),
      records: new Counter({ name: 't_records_total', help: 'Records', registers: [prom] }),
      latency: new Histogram({
        name: 't_seconds',
        help: 'Latency',
        labelNames: ['durable'],
        buckets: BOUNDS,
        registers: [prom],
      }),
    },
  };
  return { tally, prom, metrics };
}

type Call =
  | { kind: 'batch'; frame: number }
  | { kind: 'records'; n: number }
  | { kind: 'latency'; durable: number; seconds: number }
  | { kind: 'reset' };

const call: fc.Arbitrary<Call> = fc.oneof(
  fc.record({ kind: fc.constant('batch' as const), frame: fc.integer({ min: 0, max: 1 }) }),
  fc.record({ kind: fc.constant('records' as const), n: fc.integer({ min: 0, max: 1000 }) }),
  fc.record({
    kind: fc.constant('latency' as const),
    durable: fc.integer({ min: 0, max: 1 }),
    seconds: fc.oneof(fc.constantFrom(0, ...BOUNDS, 2), fc.double({ min: 0, max: 3, noNaN: true })),
  }),
  fc.constant({ kind: 'reset' as const }),
);

describe('tally metrics', () => {
  it('tally_metrics_read_as_prom_client_metrics_fed_the_same_calls', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(call, { maxLength: 40 }), async (calls) => {
        const { tally, prom, metrics } = pair();
        for (const c of calls) {
          if (c.kind === 'batch') {
            metrics.tally.batches.inc(1, c.frame);
            metrics.prom.batches.inc({ frame: FRAMES[c.frame]! });
          } else if (c.kind === 'records') {
            metrics.tally.records.inc(c.n);
            metrics.prom.records.inc(c.n);
          } else if (c.kind === 'latency') {
            metrics.tally.latency.observe(c.durable, c.seconds);
            metrics.prom.latency.observe({ durable: DURABLE[c.durable]! }, c.seconds);
          } else {
            tally.resetMetrics();
            prom.resetMetrics();
          }
        }
        expect(await tally.metrics()).toBe(await prom.metrics());
        expect(await tally.getMetricsAsJSON()).toStrictEqual(await prom.getMetricsAsJSON());
      }),
      { numRuns: 300 },
    );
  });
});
