// Goal: `group.poll({ signal })`, a job runner's own loop, honours its signal as every call given
// one does (packages/client/README.md: "it rejects with `AbortedError`, as any call given a
// signal does"): aborted before the poll went out, it claims nothing and rejects with
// AbortedError at once; aborted while the broker holds it waiting, it rejects with AbortedError,
// a typed error of the client, not the transport's stream reset.
// Found in a trial of queues: a handle's first poll opens its poll stream before it listens to
// the signal, so an abort during that opening is never heard: the poll is sent anyway, waits its
// whole `waitMs` and resolves with records it claimed for a caller that gave up (they wait out
// their visibility timeout). And an abort while it waits rejects with the transport's
// StreamResetError ("stream N reset by us with code 0"), which @felix/client does not export.
// Method: one durable felix-broker process over TLS, driven through @felix/client.
import { AbortedError } from '@felix/client';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { brokerMetric } from '../src/index.js';
import { suiteBroker } from './support.js';

describe('a group poll and its signal', () => {
  const suite = suiteBroker('streams:\n  - { tenant: t1, name: signal-jobs, durable: true }\n');

  it('a_poll_aborted_as_it_is_made_claims_nothing_and_rejects_with_aborted_error', async () => {
    const felix = suite.felix;
    const { offset } = await felix.publish('signal-jobs', 'job-0');
    const group = felix.group('signal-jobs', 'aborted-at-once');
    const ac = new AbortController();
    const polled = group.poll({ waitMs: 5_000, signal: ac.signal });
    ac.abort(); // the caller gave up before its poll was answered
    const outcome = await polled.then(
      (msgs) => msgs.map((m) => m.offset),
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(AbortedError);
    // Nothing was claimed for the caller that gave up: the record goes to the next poll at once.
    const next = await felix.group('signal-jobs', 'aborted-at-once').poll({ waitMs: 0 });
    expect(next.map((m) => [m.offset, m.attempts])).toEqual([[offset, 1]]);
  });

  it('a_poll_aborted_while_the_broker_holds_it_rejects_with_aborted_error', async () => {
    const felix = suite.felix;
    const group = felix.group('signal-jobs', 'aborted-waiting');
    await group.seek('latest'); // nothing to hand out: the poll waits
    const polls = () =>
      brokerMetric(
        suite.broker,
        /felix_broker_projection_requests_total\{type="group_poll"\} (\d+)/,
      );
    const before = await polls();
    const ac = new AbortController();
    const polled = group.poll({ waitMs: 20_000, signal: ac.signal }).then(
      () => 'resolved',
      (err: unknown) => err,
    );
    await waitFor(async () => (await polls()) > before, 'the broker to hold the poll');
    ac.abort();
    expect(await polled).toBeInstanceOf(AbortedError);
  });
});
