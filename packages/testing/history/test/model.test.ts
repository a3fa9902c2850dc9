// Goal: the checker has no false alarms: every history a correct single broker could produce
// checks valid, however its publishes, reads, cache, counter and group interleave with faults.
// Method: fast-check drives the model in support/model.ts with generated commands; each history
// it writes is checked and its text report printed on failure. The model is also shown to
// reach the cases that matter (resends, gaps, redeliveries, dead letters, unknown outcomes).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FinalReadLine, MetaLine } from '../src/index.js';
import { check, renderText } from '../src/index.js';
import { type Command, commandArb, Model, type Stops, stopsArb } from './support/model.js';

const historyArb = fc.tuple(fc.array(commandArb, { maxLength: 120, size: 'max' }), stopsArb);

describe('the history model', () => {
  it('a_history_from_the_model_always_passes', () => {
    fc.assert(
      fc.property(historyArb, ([commands, stopped]) => {
        const h = new Model().run(commands, stopped);
        const report = check(h.lines);
        if (!report.valid) throw new Error(`${renderText(report)}\n${h.text()}`);
      }),
      { numRuns: 300 },
    );
  });

  it('the_model_reaches_resends_gaps_redeliveries_dead_letters_and_forgotten_acks', () => {
    const seen = { resend: 0, gap: 0, redelivery: 0, dead: 0, info: 0, forgotten: 0 };
    fc.assert(
      fc.property(historyArb, ([commands, stopped]: [Command[], Stops]) => {
        const h = new Model().run(commands, stopped);
        const report = check(h.lines);
        for (const line of h.lines) {
          if (line.f === 'publish' && line.phase === 'invoke' && line.attempt > 1) seen.resend += 1;
          if (line.f === 'gap') seen.gap += 1;
          if (line.f === 'group_final' && line.deadLettered.length > 0) seen.dead += 1;
          if (line.phase === 'info') seen.info += 1;
        }
        seen.redelivery += report.stats.redeliveries;
        // Acks a periodic cursor forgot in a kill show up once the group is judged as onCommit.
        const [meta, ...rest] = h.lines;
        if (meta?.f !== 'meta') throw new Error('the model writes its meta line first');
        const strict = { ...meta, groups: meta.groups.map((g) => ({ ...g, cursor: 'onCommit' })) };
        if (check([strict as MetaLine, ...rest]).byRule['group-completion'] > 0)
          seen.forgotten += 1;
      }),
      { numRuns: 200, seed: 22 },
    );
    expect(seen.resend).toBeGreaterThan(0);
    expect(seen.gap).toBeGreaterThan(0);
    expect(seen.redelivery).toBeGreaterThan(0);
    expect(seen.dead).toBeGreaterThan(0);
    expect(seen.info).toBeGreaterThan(0);
    expect(seen.forgotten).toBeGreaterThan(0);
  });

  it('a_model_history_with_an_acked_value_changed_in_its_final_read_fails', () => {
    let mutated = 0;
    fc.assert(
      fc.property(historyArb, ([commands, stopped]) => {
        const h = new Model().run(commands, stopped);
        const reads = h.lines.filter(
          (l): l is FinalReadLine => l.f === 'final_read' && l.stream === 's',
        );
        const durable = new Set(
          h.lines
            .filter((l) => l.f === 'publish' && l.phase === 'invoke' && l.stream === 's')
            .map((l) => l.id),
        );
        const acked = h.lines.find((l) => {
          if (l.f !== 'publish' || l.phase !== 'ok' || !durable.has(l.id)) return false;
          const read = reads.find((r) => r.shard === l.shard);
          return read !== undefined && l.offset >= read.start;
        });
        if (acked === undefined || acked.f !== 'publish' || acked.phase !== 'ok') return;
        const read = reads.find((r) => r.shard === acked.shard) as FinalReadLine;
        read.values[acked.offset - read.start] = 'never-published';
        mutated += 1;
        expect(check(h.lines).byRule['acked-publish-present']).toBeGreaterThan(0);
      }),
      { numRuns: 100 },
    );
    expect(mutated).toBeGreaterThan(0);
  });
});
