// Goal: a retained watch's current values end where the live changes begin, even when the broker
// sends fewer values than its `retained_count` said. The broker counts the snapshot when the
// watch registers and skips a value it finds replaced or deleted by the time it reads it (that
// change reaches the watcher live, past the watch's floor). Method: FelixClient over the scripted
// fake broker, which answers `cache_watch` with a count of 2, sends one current value and then a
// live change at the floor, then ends the event stream so the client watches again.
import type { Message } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FelixClient } from '../src/client.js';
import type { CacheWatchEvent } from '../src/projections/cache.js';
import { BrokerConnection } from '../src/protocol/broker-connection.js';
import { FakeBroker, type FakeStream } from './fake-broker.js';

const FLOOR = 10;
const scope = { tenant_id: 't1', namespace: 'default', cache: 'users' };
const put = (key: string, offset: number): Message => ({
  type: 'cache_event',
  key,
  value: new TextEncoder().encode(`${key}@${offset}`),
  offset,
  expires_at_millis: 0,
});

describe('a retained watch over the scripted broker', () => {
  it('a_live_change_inside_a_short_retained_snapshot_comes_after_state_complete_and_is_not_repeated', async () => {
    const broker = new FakeBroker({ reauth: false });
    const client = await FelixClient.create(
      { servers: ['quic://fake:1'], tenant: 't1', token: 'x' },
      { open: (server, o, turn) => BrokerConnection.over(server, broker.conn, o, turn) },
    );
    const watches: Array<Extract<Message, { type: 'cache_watch' }>> = [];
    broker.answer = (at: FakeStream, msg: Message) => {
      if (msg.type !== 'cache_watch') return false;
      watches.push(msg);
      const id = msg.subscription_id!;
      if (watches.length > 1) {
        // The watch again: started where the client asked, then one new change.
        at.send({
          type: 'cache_watch_started',
          subscription_id: id,
          resume_offset: FLOOR + 1,
          resnapshot: false,
        });
        broker.openEvents(id).send(put('c', FLOOR + 1));
        return true;
      }
      // Two current values when the watch registered; `b`'s was replaced before it was read,
      // so only `a`'s is sent, then `b`'s new value as the live change it is.
      at.send({
        type: 'cache_watch_started',
        subscription_id: id,
        resume_offset: FLOOR,
        resnapshot: false,
        retained_count: 2,
      });
      const events = broker.openEvents(id);
      events.send(put('a', 3));
      events.send(put('b', FLOOR));
      // The broker ends the event stream: the client watches again from what it has seen.
      events.inbound.end();
      return true;
    };
    const seen: CacheWatchEvent[] = [];
    try {
      for await (const ev of client.cache('users').watch({ prefix: '' }, { retained: true })) {
        seen.push(ev);
        // The change sent after the second start, or (should the client loop) a bound.
        if (('key' in ev && ev.key === 'c') || seen.length > 8) break;
      }
    } finally {
      await client.close();
    }
    // Before, `b`'s live change was taken for the second current value: it came before
    // state_complete, and the watch resumed from the floor, so the broker sent it again.
    expect(seen).toMatchObject([
      { type: 'put', key: 'a', offset: 3 },
      { type: 'state_complete', retainedCount: 1, resumeOffset: FLOOR },
      { type: 'put', key: 'b', offset: FLOOR },
      { type: 'resumed', resumeFrom: FLOOR + 1 },
      { type: 'put', key: 'c', offset: FLOOR + 1 },
    ]);
    expect(watches).toHaveLength(2);
    expect(watches[1]).toMatchObject({ ...scope, from_offset: FLOOR + 1, retained: false });
  });
});
