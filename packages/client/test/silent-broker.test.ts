// Goal: a broker connection with requests waiting is declared lost once nothing at all has
// arrived from the broker for the silence bound (a stopped broker sends no RST), and only then:
// a broker whose transport keeps answering (keep-alive acks) while it takes its time over a
// publish keeps the connection. Method: FelixClient over the scripted fake broker, whose
// transport's received-packet count the test drives; the silence bound is the client's idle
// bound here (300 ms, below PEER_SILENCE_MS).
import type { Message } from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import { OutcomeUnknownError } from '../src/errors.js';
import { SILENCE_JUDGED_SENT_BYTES_MAX } from '../src/limits.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

const SILENCE_MS = 300;

async function rig(
  transport: 'quic' | 'tls' = 'quic',
): Promise<{ broker: FakeBroker; client: FelixClient }> {
  const broker = new FakeBroker({ reauth: false, transport });
  broker.packetsReceived = 1;
  const client = await FelixClient.create(
    {
      servers: [`${transport}://fake:1`],
      tenant: 't1',
      token: 'x',
      idleTimeoutMs: SILENCE_MS,
      reconnect: { attemptsMax: 1 },
    },
    { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
  );
  return { broker, client };
}

describe('a silent broker', () => {
  it('a_connection_whose_broker_sends_nothing_while_a_publish_waits_is_declared_lost', async () => {
    const { broker, client } = await rig();
    broker.answer = (_at, msg) => msg.type === 'publish_batch'; // never answered, nothing sent
    try {
      await expect(client.publish('orders', 'a')).rejects.toBeInstanceOf(OutcomeUnknownError);
    } finally {
      await client.close();
    }
  });

  it('a_connection_whose_broker_transport_keeps_answering_keeps_a_slow_publish', async () => {
    const { broker, client } = await rig();
    // The broker's transport acks every keep-alive; the publish is answered after five bounds.
    const acks = setInterval(() => {
      broker.packetsReceived! += 1;
    }, SILENCE_MS / 6);
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'publish_batch') return false;
      const id = msg.request_id!;
      setTimeout(() => at.send({ type: 'publish_ok', request_id: id, offset: 7 }), 5 * SILENCE_MS);
      return true;
    };
    try {
      await expect(client.publish('orders', 'a')).resolves.toMatchObject({ offset: 7 });
    } finally {
      clearInterval(acks);
      await client.close();
    }
  });

  it('a_connection_with_no_request_waiting_whose_broker_goes_silent_is_declared_lost', async () => {
    // A trial over QUIC: a client holding only a subscription, a watch or a parked group poll
    // noticed a SIGKILLed broker at the idle bound (16 s), not at the silence bound (3 s).
    const { broker, client } = await rig();
    const acks = setInterval(() => {
      broker.packetsReceived! += 1;
    }, SILENCE_MS / 6);
    const said: string[] = [];
    const ac = new AbortController();
    const followed = (async () => {
      for await (const s of client.status({ signal: ac.signal })) {
        said.push(s.type);
        if (s.type === 'disconnected') return s;
      }
      return undefined;
    })();
    try {
      // Answering keep-alives for many bounds, it stays.
      await new Promise<void>((ok) => {
        let seen = 0;
        const counting = setInterval(() => {
          if (++seen < 10) return;
          clearInterval(counting);
          ok();
        }, SILENCE_MS / 2);
      });
      expect(said).not.toContain('disconnected');
      clearInterval(acks); // SIGKILLed: nothing arrives any more, and nothing waits on it
      const lost = await followed;
      expect(lost).toMatchObject({ type: 'disconnected' });
    } finally {
      clearInterval(acks);
      ac.abort();
      await client.close();
    }
  });

  it('a_tls_connection_with_no_request_waiting_whose_broker_goes_silent_is_declared_lost', async () => {
    // A subscriber over TLS noticed a stopped or cut-off leader only at the idle bound (15 s):
    // it sends nothing but keep-alives, so the broker's answers to them are not held behind a
    // backlog, and their absence means the broker is gone.
    const { broker, client } = await rig('tls');
    const lost = firstDisconnect(client);
    try {
      broker.bytesSent += SILENCE_JUDGED_SENT_BYTES_MAX; // at the bound: still judged
      const said = await lost.event;
      expect(said).toMatchObject({ type: 'disconnected' });
      expect(said?.reason).toMatch(/nothing received for \d+ ms$/);
    } finally {
      lost.stop();
      await client.close();
    }
  });

  it('a_tls_connection_that_sent_much_since_it_last_heard_is_not_judged_by_silence_alone', async () => {
    // A flood of unacknowledged publishes: the broker's answer to a keep-alive queues behind
    // them, so silence says nothing here (the connection keeps to its idle bound).
    const { broker, client } = await rig('tls');
    broker.bytesSent += SILENCE_JUDGED_SENT_BYTES_MAX + 1;
    expect(await judgedWithinFiveBounds(client)).toBe(false);
  });

  it('a_tls_connection_holding_unsent_bytes_is_not_judged_by_silence_alone', async () => {
    // Bytes this client could not hand to the kernel yet: a slow path, not a silent broker.
    const { broker, client } = await rig('tls');
    broker.sendBufferedBytes = 1;
    expect(await judgedWithinFiveBounds(client)).toBe(false);
  });
});

/** Whether the client says `disconnected` within five silence bounds (then it is closed). */
async function judgedWithinFiveBounds(client: FelixClient): Promise<boolean> {
  const lost = firstDisconnect(client);
  let ticks = 0;
  const counting = setInterval(() => {
    ticks += 1;
  }, SILENCE_MS / 6);
  try {
    await waitFor(() => lost.seen() || ticks >= 30, 'five silence bounds', 20_000);
    return lost.seen();
  } finally {
    clearInterval(counting);
    lost.stop();
    await client.close();
  }
}

/** The client's first `disconnected` status event, and whether it came yet. */
function firstDisconnect(client: FelixClient) {
  const ac = new AbortController();
  let came = false;
  const event = (async () => {
    for await (const s of client.status({ signal: ac.signal })) {
      if (s.type === 'disconnected') {
        came = true;
        return s;
      }
    }
    return undefined;
  })();
  return { event, seen: () => came, stop: () => ac.abort() };
}
