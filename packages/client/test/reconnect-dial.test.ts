// Goal: a client whose lone broker stopped dials it again with a short bound on most attempts
// (a stopped broker answers no QUIC handshake, so each attempt used to wait the whole 10 s
// connect timeout and a restarted broker was reached up to 10 s late), and with the whole connect
// timeout on every RECONNECT_FULL_DIAL_EVERY-th attempt, so a broker slow to handshake is still
// reached. Method: FelixClient over the scripted fake broker for its first connection; every
// later dial is refused at once and records the connect bound it was given.
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import {
  CONNECT_TIMEOUT_MS_DEFAULT,
  RECONNECT_FULL_DIAL_EVERY,
  UNREACHED_DIAL_TIMEOUT_MS,
} from '../src/limits.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker } from './fake-broker.js';

describe('reconnect dials', () => {
  it('a_reconnect_to_a_stopped_broker_dials_briefly_and_every_few_attempts_with_the_whole_bound', async () => {
    const broker = new FakeBroker({ reauth: false });
    const bounds: number[] = [];
    const client = await FelixClient.create(
      {
        servers: ['quic://fake:1'],
        tenant: 't1',
        token: 'x',
        reconnect: { baseMs: 1, maxDelayMs: 1, attemptsMax: 2 * RECONNECT_FULL_DIAL_EVERY },
      },
      {
        open: (server, o, turn) => {
          bounds.push(o.connectTimeoutMs);
          return bounds.length === 1
            ? BrokerConnection.over(server, broker.conn, o, turn)
            : Promise.reject(new Error('no handshake'));
        },
      },
    );
    try {
      expect(bounds).toEqual([CONNECT_TIMEOUT_MS_DEFAULT]); // the first connect: the whole bound
      broker.kill();
      await waitFor(
        () => bounds.length === 1 + 2 * RECONNECT_FULL_DIAL_EVERY || undefined,
        'every reconnect attempt',
        10_000,
      );
      const short = UNREACHED_DIAL_TIMEOUT_MS;
      const full = CONNECT_TIMEOUT_MS_DEFAULT;
      const cycle = [...Array(RECONNECT_FULL_DIAL_EVERY - 1).fill(short), full];
      expect(bounds.slice(1)).toEqual([...cycle, ...cycle]);
    } finally {
      await client.close();
    }
  });

  it('each_seed_gets_its_own_long_reconnect_dial_every_few_dials_of_it', async () => {
    // The lost broker (a) is suspect for a while, so the other two seeds rotate: counted over all
    // attempts, every long dial landed on the same one of them, and a broker slow to handshake
    // on the other only ever had short ones.
    const broker = new FakeBroker({ reauth: false });
    const dials: Array<[string, number]> = [];
    const client = await FelixClient.create(
      {
        servers: ['quic://a:1', 'quic://b:1', 'quic://c:1'],
        tenant: 't1',
        token: 'x',
        reconnect: { baseMs: 1, maxDelayMs: 1, attemptsMax: 4 * RECONNECT_FULL_DIAL_EVERY },
      },
      {
        open: (server, o, turn) => {
          dials.push([server, o.connectTimeoutMs]);
          return dials.length === 1
            ? BrokerConnection.over(server, broker.conn, o, turn)
            : Promise.reject(new Error('no handshake'));
        },
      },
    );
    try {
      broker.kill();
      await waitFor(
        () => dials.length === 1 + 4 * RECONNECT_FULL_DIAL_EVERY || undefined,
        'every reconnect attempt',
        10_000,
      );
      const cycle = [
        ...Array(RECONNECT_FULL_DIAL_EVERY - 1).fill(UNREACHED_DIAL_TIMEOUT_MS),
        CONNECT_TIMEOUT_MS_DEFAULT,
      ];
      for (const seed of ['quic://b:1', 'quic://c:1']) {
        const bounds = dials
          .slice(1)
          .filter(([s]) => s === seed)
          .map(([, ms]) => ms);
        expect(bounds).toEqual([...cycle, ...cycle]);
      }
    } finally {
      await client.close();
    }
  });
});
