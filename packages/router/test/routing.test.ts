// Goal: the broker's routing verdicts: a client's request is served where the shard is served,
// sent on to the leader otherwise, or refused while nobody serves it; a forward is done only by
// the serving leader at the sender's generation, answered not_leader when the sender is behind
// or the receiver is not the leader (never relayed), and stale_route when the receiver is behind.
// Method: the pure functions over every combination of view, serving and generation.
import { describe, expect, it } from 'vitest';
import { judgeForward, routeAtIngress, routeWriteAtIngress } from '../src/index.js';

const led = (leader: string, generation: number) => ({ leader, generation });

describe('routing', () => {
  it('a_request_is_served_forwarded_or_refused_by_who_leads_its_shard', () => {
    expect(routeAtIngress('a', led('a', 3), true)).toEqual({ kind: 'local' });
    // A shard still served while the feed already names another leader stays local until
    // this broker lets it go.
    expect(routeAtIngress('a', led('b', 4), true)).toEqual({ kind: 'local' });
    expect(routeAtIngress('a', led('b', 4), false)).toEqual({
      kind: 'remote',
      leader: 'b',
      generation: 4,
    });
    expect(routeAtIngress('a', led('a', 4), false)).toEqual({
      kind: 'unavailable',
      reason: 'not_ready',
    });
    expect(routeAtIngress('a', undefined, false)).toEqual({
      kind: 'unavailable',
      reason: 'not_assigned',
    });
  });

  it('a_write_goes_to_the_leader_the_assignment_names_even_while_this_broker_still_serves', () => {
    // Found by a 3-broker campaign (seed 307): a cache leader back from a partition had applied
    // the assignment giving the shard away but was still releasing it, and acked a cache put
    // locally; the new leader never had it.
    expect(routeWriteAtIngress('a', led('b', 4), true)).toEqual({
      kind: 'remote',
      leader: 'b',
      generation: 4,
    });
    expect(routeWriteAtIngress('a', led('a', 4), true)).toEqual({ kind: 'local' });
    expect(routeWriteAtIngress('a', undefined, true)).toEqual({ kind: 'local' });
    expect(routeWriteAtIngress('a', led('a', 4), false)).toEqual({
      kind: 'unavailable',
      reason: 'not_ready',
    });
  });

  it('a_forward_is_served_only_by_the_serving_leader_at_the_senders_generation', () => {
    expect(judgeForward('b', led('b', 4), true, 4)).toEqual({ kind: 'serve' });
    // The sender is behind: it hears the leader and generation this broker knows.
    expect(judgeForward('b', led('b', 5), true, 4)).toEqual({
      kind: 'not_leader',
      leader: 'b',
      generation: 5,
    });
    // The receiver is behind: the sender retries once it has caught up.
    expect(judgeForward('b', led('b', 4), true, 6)).toEqual({ kind: 'stale_route', known: 4 });
    expect(judgeForward('b', undefined, false, 1)).toEqual({ kind: 'stale_route', known: 0 });
    // Leading but not open yet.
    expect(judgeForward('b', led('b', 4), false, 4)).toEqual({
      kind: 'unavailable',
      reason: 'not_ready',
    });
  });

  it('a_non_owner_answers_a_forward_not_leader_and_never_relays_it', () => {
    // Equal generations, but another broker leads: name it, never forward again.
    expect(judgeForward('c', led('b', 4), false, 4)).toEqual({
      kind: 'not_leader',
      leader: 'b',
      generation: 4,
    });
    // Even a receiver still serving from a lapsed generation refuses a forward of the newer.
    expect(judgeForward('c', led('b', 4), true, 4)).toEqual({
      kind: 'not_leader',
      leader: 'b',
      generation: 4,
    });
  });
});
