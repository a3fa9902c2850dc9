// Goal: a consume loop ends at once when its caller's signal aborts or its client closes, also
// while the caller holds a batch: docs/queues.md, "A `consume()` loop runs until you end it":
// "What ends the loop instead: the caller (`break`, `return()`, its `signal`, each honoured at
// once ...) ... and the client's close"; packages/client/README.md: "a `signal`, a `break` or
// `client.close()` ends it at once". A worker that aborts its loop on SIGTERM must not be handed
// more jobs (up to a poll's `max`, 100 by default) to work through before it may exit, and one
// whose client closed must not be handed a job it can no longer ack.
// Found in a trial of queues: the loop answers the next message of the batch in hand without
// looking at its signal or the client: after an abort it yields the whole rest of the batch
// (over a real broker: 9 more jobs of a poll of 10), and after `close()` the next job, whose ack
// then fails with ClientClosedError (and the rest of the batch waits out its visibility timeout).
// Method: a Group over the fake broker connection of group-consume-rig.ts, polls of 2 records.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { consumeRig } from './group-consume-rig.js';

describe('a consume loop ended while the caller holds a batch', () => {
  it('a_consume_loop_yields_nothing_more_of_its_batch_once_its_signal_aborts', async () => {
    const ctl = new AbortController();
    const { it: loop, polls, answerPoll, nacked } = consumeRig(ctl.signal);
    const first = loop.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0); // offsets 0 and 1
    expect((await first).value?.offset).toBe(0);
    ctl.abort(); // the worker is told to stop while it works on offset 0
    const after = await loop.next();
    expect(after.done ? 'done' : `offset ${after.value.offset} yielded`).toBe('done');
    // Offset 1, never yielded, goes back rather than out to a worker that is stopping.
    await waitFor(() => nacked().includes(1), 'the unyielded record handed back', 5_000);
  });

  it('a_consume_loop_yields_nothing_more_of_its_batch_once_its_client_closes', async () => {
    const { it: loop, polls, answerPoll, close } = consumeRig();
    const first = loop.next();
    await waitFor(() => polls().length === 1, 'the first poll', 5_000);
    answerPoll(0, 0); // offsets 0 and 1
    expect((await first).value?.offset).toBe(0);
    close(); // the client closes while the worker works on offset 0
    const after = await loop.next();
    expect(after.done ? 'done' : `offset ${after.value.offset} yielded`).toBe('done');
  });
});
