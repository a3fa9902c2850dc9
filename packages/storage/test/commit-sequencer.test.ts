/**
 * Goal: the CommitSequencer applies writes in offset order whatever order their flushes
 * finish, never strands a writer, and wakes only the turn whose time has come.
 * Method: a fast-check model run with a random scheduler deciding flush completion order,
 * cancellations and abandons; plus direct checks of wake-up and reset behaviour.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CommitSequencer } from '../src/commit-sequencer.js';
import { SupersededError, TurnCancelledError } from '../src/errors.js';

type Fate = 'release' | 'abandon' | 'cancel_before' | 'cancel_during';

describe('CommitSequencer', () => {
  it('commits_apply_in_offset_order_whatever_order_flushes_finish', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(
          fc.record({
            size: fc.integer({ min: 1, max: 5 }),
            gap: fc.integer({ min: 0, max: 2 }),
            fate: fc.constantFrom<Fate>(
              'release',
              'release',
              'abandon',
              'cancel_before',
              'cancel_during',
            ),
          }),
          { minLength: 1, maxLength: 24 },
        ),
        fc.nat({ max: 1000 }),
        async (s, writers, start) => {
          const seq = new CommitSequencer(start);
          const applied: number[] = [];
          const resolvedFirsts = new Set<number>();
          let offset = start;
          const firsts: number[] = [];
          const runs = writers.map((w) => {
            offset += w.gap;
            const first = offset;
            offset += w.size;
            firsts.push(first);
            const turn = seq.reserve(first, offset);
            const ac = new AbortController();
            // Cancellation resolves the turn at the abort itself; note it before waiters wake.
            ac.signal.addEventListener('abort', () => resolvedFirsts.add(first));
            if (w.fate === 'cancel_before') ac.abort(new Error('caller gave up'));
            return (async () => {
              await s.schedule(Promise.resolve(), `flush of ${first}`);
              if (w.fate === 'cancel_during') {
                s.schedule(Promise.resolve(), `cancel of ${first}`).then(() => ac.abort());
              }
              try {
                await turn.wait(ac.signal);
              } catch (err) {
                expect(err).toBeInstanceOf(TurnCancelledError);
                return 'cancelled';
              }
              // Everything below this turn has resolved before it applies.
              for (const f of firsts) if (f < first) expect(resolvedFirsts.has(f)).toBe(true);
              if (w.fate === 'abandon') {
                resolvedFirsts.add(first);
                turn.abandon();
                return 'abandoned';
              }
              applied.push(first);
              resolvedFirsts.add(first);
              turn.release();
              return 'applied';
            })();
          });
          await s.waitAll();
          const outcomes = await Promise.all(runs);
          expect(applied).toEqual([...applied].sort((a, b) => a - b));
          writers.forEach((w, i) => {
            if (w.fate === 'release') expect(outcomes[i]).toBe('applied');
            if (w.fate === 'cancel_before') expect(outcomes[i]).toBe('cancelled');
          });
          expect(seq.pending).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('releasing_a_turn_wakes_only_the_next_waiter', async () => {
    const seq = new CommitSequencer(0);
    const a = seq.reserve(0, 1);
    const b = seq.reserve(1, 2);
    const c = seq.reserve(2, 3);
    const woke: string[] = [];
    const pb = b.wait().then(() => woke.push('b'));
    const pc = c.wait().then(() => woke.push('c'));
    await a.wait();
    a.release();
    await pb;
    expect(woke).toEqual(['b']);
    b.release();
    await pc;
    expect(woke).toEqual(['b', 'c']);
    c.release();
    expect(seq.pending).toBe(0);
  });

  it('an_out_of_order_release_waits_for_the_prefix', async () => {
    const seq = new CommitSequencer(10);
    const a = seq.reserve(10, 12);
    const b = seq.reserve(12, 13);
    const c = seq.reserve(13, 20);
    b.release();
    let cRan = false;
    const pc = c.wait().then(() => {
      cRan = true;
    });
    await Promise.resolve();
    expect(cRan).toBe(false);
    expect(seq.pending).toBe(3);
    a.abandon();
    await pc;
    expect(cRan).toBe(true);
    c.release();
    expect(seq.pending).toBe(0);
  });

  it('a_reset_supersedes_every_waiting_turn', async () => {
    const seq = new CommitSequencer(0);
    const a = seq.reserve(0, 1);
    const b = seq.reserve(1, 2);
    const pb = b.wait();
    seq.reset(5);
    await expect(pb).rejects.toBeInstanceOf(SupersededError);
    await expect(a.wait()).rejects.toBeInstanceOf(SupersededError);
    a.release(); // a stale release is ignored
    const d = seq.reserve(5, 6);
    await d.wait();
    d.release();
    expect(seq.pending).toBe(0);
  });
});
