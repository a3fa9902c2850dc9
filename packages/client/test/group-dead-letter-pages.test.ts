// Goal: a group's dead letters are read page by page: `deadLetterPage` sends `after` and
// `limit` only to a broker that advertised FEATURE_HI_GROUP_DEAD_LETTER_PAGES (an older one
// ignores them and would answer its first page again), `allDeadLetters` walks every page once,
// a broker without pages is still served from its one list (exactly, below 1,000; past a full
// list the call is refused, never answered empty), and bad page options are refused before
// anything is sent. Method: a Group over a stand-in host whose "broker" answers from a list of
// dead offsets the way a paged or an unpaged broker does.
import { FEATURE_HI_GROUP_DEAD_LETTER_PAGES } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { FeatureUnsupportedError, InvalidArgumentError } from '../src/errors.js';
import { GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX } from '../src/limits.js';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

type Ask = { type: string; after?: number; limit?: number; request_id: number };

/** A host whose broker holds `dead` (sorted) and answers as a paged broker or an older one. */
function brokerOf(dead: number[], paged: boolean) {
  const asked: Ask[] = [];
  const answer = (ask: Ask) => {
    if (!paged) {
      // An older broker: the fields are unknown to it, the lowest 1,000 come back.
      return {
        type: 'group_dead_letter_list',
        offsets: dead.slice(0, GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX),
        request_id: ask.request_id,
        more: false,
      };
    }
    const above = dead.filter((o) => o > (ask.after ?? -1));
    const limit = ask.limit ?? GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX;
    return {
      type: 'group_dead_letter_list',
      offsets: above.slice(0, limit),
      request_id: ask.request_id,
      more: above.length > limit,
    };
  };
  const bc = {
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: {
      flags: 0,
      features: 0xffff_ffff,
      featuresHi: paged ? FEATURE_HI_GROUP_DEAD_LETTER_PAGES : 0,
      window: 1,
    },
    requests: {
      request: (make: (id: number) => Ask) => {
        const ask = make(asked.length + 1);
        asked.push(ask);
        return Promise.resolve(answer(ask));
      },
    },
  } as unknown as BrokerConnection;
  const host = {
    closed: false,
    connection: () => Promise.resolve(bc),
  } as unknown as ProjectionHost;
  return { group: new Group(host, 'jobs', 'billing'), asked };
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const range = (n: number) => [...Array(n).keys()];

describe('group dead-letter pages', () => {
  it('dead_letter_pages_are_asked_with_after_and_limit_only_of_a_broker_that_offers_them', async () => {
    const dead = range(2_500).map((i) => 2 * i);
    const paged = brokerOf(dead, true);
    expect(await paged.group.deadLetterPage({ after: 10, limit: 3 })).toEqual({
      offsets: [12, 14, 16],
      more: true,
    });
    expect(paged.asked[0]).toMatchObject({ type: 'group_dead_letters', after: 10, limit: 3 });
    // The array form is the same page, as before when no fields are given.
    expect(await paged.group.deadLetters()).toEqual(dead.slice(0, 1000));
    expect(paged.asked[1]).not.toHaveProperty('after');
    expect(paged.asked[1]).not.toHaveProperty('limit');
    // Walked: every offset once, in order, a request per page of `limit`.
    const before = paged.asked.length;
    expect(await collect(paged.group.allDeadLetters({ limit: 1000 }))).toEqual(dead);
    expect(paged.asked.length - before).toBe(3);
    const pages = await collect(paged.group.deadLetterPages({ after: dead[2_400]!, limit: 60 }));
    expect(pages.map((p) => [p.offsets.length, p.more])).toEqual([
      [60, true],
      [39, false],
    ]);

    // An older broker is sent neither field; short of a full list its pages are exact.
    const old = brokerOf(range(250), false);
    expect(await collect(old.group.allDeadLetters({ limit: 100 }))).toEqual(range(250));
    for (const ask of old.asked) expect(Object.keys(ask)).not.toContain('after');
    for (const ask of old.asked) expect(Object.keys(ask)).not.toContain('limit');
    expect(await old.group.deadLetterPage({ after: 200 })).toEqual({
      offsets: range(49).map((i) => 201 + i),
      more: false,
    });
  });

  it('a_broker_without_dead_letter_pages_refuses_a_walk_past_its_first_thousand', async () => {
    const old = brokerOf(range(2_500), false);
    // The first 1,000 are listed, and may be followed by more: the walk cannot say it ended.
    expect(await old.group.deadLetterPage({ after: 990 })).toEqual({
      offsets: range(9).map((i) => 991 + i),
      more: true,
    });
    const seen: number[] = [];
    const walk = (async () => {
      for await (const o of old.group.allDeadLetters()) seen.push(o);
    })();
    await expect(walk).rejects.toBeInstanceOf(FeatureUnsupportedError);
    expect(seen).toEqual(range(1000));
  });

  it('a_dead_letter_page_with_a_bad_after_or_limit_is_refused_before_it_is_sent', async () => {
    const { group, asked } = brokerOf([1, 2, 3], true);
    const bad = [
      { after: -1 },
      { after: 1.5 },
      { after: Number.NaN },
      { after: 2 ** 53 },
      { limit: 0 },
      { limit: -5 },
      { limit: 2.5 },
      { limit: GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX + 1 },
    ];
    for (const opts of bad) {
      await expect(group.deadLetterPage(opts), JSON.stringify(opts)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(collect(group.allDeadLetters(opts))).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
    }
    expect(asked).toHaveLength(0);
    expect(
      await group.deadLetters({ after: 0, limit: GROUP_DEAD_LETTER_PAGE_OFFSETS_MAX }),
    ).toEqual([1, 2, 3]);
  });
});
