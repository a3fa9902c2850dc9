// Goal: a consumer group's admin calls (describe, deadLetters, redrive, discard, seek, delete)
// end when the caller's signal aborts, as cache and counter calls do: while they wait for a
// connection (a broker down, a reconnect pending) and while a sent request waits for its answer
// (a stalled broker). A write so ended says its outcome is unknown; a read says nothing was left.
// Method: a Group over stand-in hosts that never connect, or whose broker never answers.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { AbortedError } from '../src/errors.js';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

const never = () => new Promise<never>(() => undefined);

/** A host whose broker never answers (`answers: false`) or that never connects (`connects`). */
function standIn(connects: boolean) {
  const sent: unknown[] = [];
  const bc = {
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: 0xffff_ffff, featuresHi: 0, window: 1 },
    requests: {
      request: (make: (id: number) => unknown) => {
        sent.push(make(1));
        return never();
      },
    },
  } as unknown as BrokerConnection;
  const host = {
    closed: false,
    // As the client's: a wait for a reconnect that the signal ends with AbortedError.
    connection: (signal?: AbortSignal) =>
      connects
        ? Promise.resolve(bc)
        : new Promise((_resolve, reject) =>
            signal?.addEventListener('abort', () => reject(new AbortedError('the call')), {
              once: true,
            }),
          ),
  } as unknown as ProjectionHost;
  return { group: new Group(host, 'jobs', 'billing'), sent };
}

function adminCalls(group: Group, signal: AbortSignal) {
  return {
    describe: group.describe({ signal }),
    deadLetters: group.deadLetters({ signal }),
    redrive: group.redrive(3, { signal }),
    discard: group.discard(4, { signal }),
    seek: group.seek('latest', { signal }),
    delete: group.delete({ signal }),
  };
}

const WRITES = new Set(['redrive', 'discard', 'seek', 'delete']);

describe('group admin calls and the caller signal', () => {
  it('a_group_admin_call_ends_when_its_signal_aborts_waiting_for_a_connection_or_an_answer', {
    timeout: 10_000,
  }, async () => {
    for (const connects of [false, true]) {
      const { group, sent } = standIn(connects);
      const ac = new AbortController();
      const calls = Object.entries(adminCalls(group, ac.signal)).map(
        async ([name, p]) =>
          [name, await (p as Promise<unknown>).catch((e: unknown) => e)] as const,
      );
      // Sent and unanswered (a stalled broker), or still waiting for a connection.
      if (connects) await waitFor(() => sent.length === 6, 'the six requests sent');
      else expect(sent).toHaveLength(0);
      ac.abort();
      for (const [name, err] of await Promise.all(calls)) {
        expect(err, name).toBeInstanceOf(AbortedError);
        // Once sent, a write may have been applied; a read, or a call never sent, left nothing.
        const unknown = connects && WRITES.has(name);
        expect((err as AbortedError).retry === 'unknown_outcome', name).toBe(unknown);
      }
    }
  });
});
