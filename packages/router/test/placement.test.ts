// Goal: the pure placement function follows rendezvous order, spreads replicas over zones,
// respects capacity, keeps what still works and bumps generations only on change; a quorum
// shard's set changes one step at a time (its leader, or its members under an established one).
// Method: direct calls with hand-built node lists; no I/O.
import { describe, expect, it } from 'vitest';
import {
  InvalidReplicationFactorError,
  type PlacementNode,
  type ShardKey,
  placeShard,
  planPlacement,
  rankNodes,
  rendezvousScore,
} from '../src/index.js';

const node = (nodeId: string, zone: string | null, extra: Partial<PlacementNode> = {}) => ({
  nodeId,
  zone,
  eligible: true,
  routable: true,
  maxShards: 0,
  ...extra,
});
const key = (name: string, shard = 0, kind: ShardKey['kind'] = 'stream'): ShardKey => ({
  kind,
  tenant: 't1',
  namespace: 'ns',
  name,
  shard,
});

function placed(p: ReturnType<typeof placeShard>) {
  if (!p.placed) throw new Error('expected a placement');
  return p;
}

describe('placement', () => {
  it('the_highest_scoring_eligible_node_leads_a_fresh_shard', () => {
    const nodes = ['a', 'b', 'c', 'd'].map((id) => node(id, null));
    for (let s = 0; s < 20; s++) {
      const k = key('orders', s);
      const best = [...nodes].sort(
        (x, y) => rendezvousScore(k, y.nodeId) - rendezvousScore(k, x.nodeId),
      )[0]!;
      const p = placed(placeShard({ key: k, replicationFactor: 1 }, nodes));
      expect(p.assignment.leader).toBe(best.nodeId);
      expect(p.assignment.generation).toBe(1);
    }
  });

  it('placement_does_not_depend_on_the_order_nodes_are_listed', () => {
    const nodes = ['n1', 'n2', 'n3', 'n4', 'n5'].map((id, i) => node(id, `z${i % 2}`));
    const reversed = [...nodes].reverse();
    for (let s = 0; s < 16; s++) {
      const a = placed(placeShard({ key: key('x', s), replicationFactor: 3 }, nodes));
      const b = placed(placeShard({ key: key('x', s), replicationFactor: 3 }, reversed));
      expect(b.assignment).toEqual(a.assignment);
    }
  });

  it('replicas_spread_into_zones_the_shard_lacks_first', () => {
    const nodes = [
      node('a1', 'a'),
      node('a2', 'a'),
      node('a3', 'a'),
      node('b1', 'b'),
      node('c1', 'c'),
    ];
    for (let s = 0; s < 30; s++) {
      const p = placed(placeShard({ key: key('z', s), replicationFactor: 3 }, nodes));
      const zones = new Set(p.assignment.replicas.map((id) => id[0]));
      expect(zones.size).toBe(3);
    }
  });

  it('a_node_at_max_shards_receives_no_new_copies', () => {
    const nodes = [node('full', null, { maxShards: 1 }), node('free', null)];
    const load = new Map([['full', 1]]);
    for (let s = 0; s < 10; s++) {
      const p = placed(placeShard({ key: key('cap', s), replicationFactor: 2 }, nodes, load));
      expect(p.assignment.replicas).toEqual(['free']);
    }
  });

  it('plan_placement_shares_capacity_across_shards', () => {
    const nodes = [node('a', null, { maxShards: 3 }), node('b', null, { maxShards: 3 })];
    const shards = Array.from({ length: 8 }, (_, s) => ({
      key: key('cap', s),
      replicationFactor: 1,
    }));
    const plan = planPlacement(shards, nodes);
    const perNode = new Map<string, number>();
    for (const e of plan) {
      if (e.placement.placed) {
        const l = e.placement.assignment.leader;
        perNode.set(l, (perNode.get(l) ?? 0) + 1);
      }
    }
    expect(perNode.get('a')).toBe(3);
    expect(perNode.get('b')).toBe(3);
    expect(plan.filter((e) => !e.placement.placed)).toHaveLength(2);
  });

  it('a_live_leader_keeps_its_shard_when_a_better_scoring_node_joins', () => {
    const k = key('stay');
    const ranked = rankNodes(
      k,
      ['a', 'b', 'c', 'd', 'e'].map((id) => node(id, null)),
    );
    const best = ranked[0]!;
    const others = ranked.slice(1);
    const first = placed(placeShard({ key: k, replicationFactor: 1 }, others));
    const again = placed(
      placeShard({ key: k, replicationFactor: 1, current: first.assignment }, [...others, best]),
    );
    expect(again.changed).toBe(false);
    expect(again.assignment).toEqual(first.assignment);
  });

  it('a_leader_that_is_not_routable_hands_over_to_its_best_live_replica', () => {
    const nodes = ['a', 'b', 'c', 'd'].map((id) => node(id, id));
    const k = key('failover');
    const first = placed(placeShard({ key: k, replicationFactor: 3 }, nodes));
    const dead = first.assignment.leader;
    const after = nodes.map((n) =>
      n.nodeId === dead ? { ...n, eligible: false, routable: false } : n,
    );
    const next = placed(
      placeShard({ key: k, replicationFactor: 3, current: first.assignment }, after),
    );
    expect(next.changed).toBe(true);
    expect(first.assignment.replicas.slice(1)).toContain(next.assignment.leader);
    expect(next.assignment.replicas).not.toContain(dead);
    expect(next.assignment.replicas).toHaveLength(3);
    expect(next.assignment.generation).toBe(first.assignment.generation + 1);
  });

  it('a_leader_lost_with_no_policy_hands_over_to_its_most_caught_up_reported_replica', () => {
    // Before, the live replica was chosen by rank alone, however far fullest the report said it
    // was: an operator accepting a node's loss could keep the emptier copy.
    const nodes = ['a', 'b', 'c', 'd'].map((id) => node(id, id));
    const k = key('accepted');
    const first = placed(placeShard({ key: k, replicationFactor: 3 }, nodes));
    const [dead, ranked, fullest] = first.assignment.replicas as [string, string, string];
    const after = nodes.map((n) =>
      n.nodeId === dead ? { ...n, eligible: false, routable: false } : n,
    );
    const current = first.assignment;
    const byRank = placed(placeShard({ key: k, replicationFactor: 3, current }, after));
    expect(byRank.assignment.leader).toBe(ranked);
    const prefer = [fullest, ranked];
    const next = placed(placeShard({ key: k, replicationFactor: 3, current, prefer }, after));
    expect(next.assignment.leader).toBe(fullest);
    expect(next.assignment.replicas).toContain(ranked);
    // A replica the report does not name comes after those it does.
    const partly = placed(
      placeShard({ key: k, replicationFactor: 3, current, prefer: ['zz', fullest] }, after),
    );
    expect(partly.assignment.leader).toBe(fullest);
  });

  it('the_kind_is_part_of_the_placement_key', () => {
    const nodes = Array.from({ length: 8 }, (_, i) => node(`n${i}`, null));
    let differs = 0;
    for (let s = 0; s < 32; s++) {
      const a = placed(placeShard({ key: key('same', s, 'stream'), replicationFactor: 1 }, nodes));
      const b = placed(placeShard({ key: key('same', s, 'cache'), replicationFactor: 1 }, nodes));
      if (a.assignment.leader !== b.assignment.leader) differs++;
    }
    expect(differs).toBeGreaterThan(0);
  });

  it('rendezvous_scores_spread_shards_within_three_standard_deviations_of_even', () => {
    const nodes = ['node-1', 'node-2', 'node-3', 'node-4'].map((id) => node(id, null));
    const count = new Map<string, number>();
    for (let s = 0; s < 1200; s++) {
      const p = placed(placeShard({ key: key('spread', s), replicationFactor: 1 }, nodes));
      count.set(p.assignment.leader, (count.get(p.assignment.leader) ?? 0) + 1);
    }
    for (const n of nodes) {
      const c = count.get(n.nodeId) ?? 0;
      expect(Math.abs(c - 300)).toBeLessThanOrEqual(45); // binomial sd is 15
    }
  });

  it('a_shard_with_no_eligible_node_stays_unplaced', () => {
    const nodes = [node('a', null, { eligible: false, routable: false })];
    expect(placeShard({ key: key('none'), replicationFactor: 1 }, nodes)).toEqual({
      placed: false,
      reason: 'no_eligible_node',
    });
  });

  it('a_replication_factor_out_of_range_is_refused', () => {
    expect(() => placeShard({ key: key('rf'), replicationFactor: 0 }, [])).toThrow(
      InvalidReplicationFactorError,
    );
    expect(() => placeShard({ key: key('rf'), replicationFactor: 17 }, [])).toThrow(
      InvalidReplicationFactorError,
    );
  });

  it('a_lost_leader_hands_over_only_to_a_failover_candidate_even_against_rank', () => {
    const nodes = ['a', 'b', 'c', 'd'].map((id) => node(id, id));
    const k = key('caught-up');
    const first = placed(placeShard({ key: k, replicationFactor: 3 }, nodes));
    const dead = first.assignment.leader;
    const after = nodes.map((n) =>
      n.nodeId === dead ? { ...n, eligible: false, routable: false } : n,
    );
    const current = first.assignment;
    // Without a policy the best-ranked replica leads; the policy names the other one.
    const free = placed(placeShard({ key: k, replicationFactor: 3, current }, after));
    const other = current.replicas.slice(1).find((id) => id !== free.assignment.leader)!;
    const next = placed(
      placeShard(
        { key: k, replicationFactor: 3, current, failover: { candidates: [other] } },
        after,
      ),
    );
    expect(next.assignment.leader).toBe(other);
    expect(next.assignment.generation).toBe(current.generation + 1);
  });

  it('a_lost_leader_without_a_failover_candidate_leaves_its_shard_unplaced', () => {
    const nodes = ['a', 'b', 'c'].map((id) => node(id, id));
    const k = key('waits');
    const first = placed(placeShard({ key: k, replicationFactor: 1 }, nodes));
    const dead = first.assignment.leader;
    const after = nodes.map((n) =>
      n.nodeId === dead ? { ...n, eligible: false, routable: false } : n,
    );
    const req = { key: k, replicationFactor: 1, current: first.assignment };
    expect(placeShard(req, after).placed).toBe(true);
    const p = placeShard({ ...req, failover: { candidates: [] } }, after);
    expect(p).toEqual({ placed: false, reason: 'no_caught_up_replica' });
    // The owner back: it leads again, unchanged.
    const back = placed(placeShard({ ...req, failover: { candidates: [] } }, nodes));
    expect(back.changed).toBe(false);
    expect(back.assignment).toEqual(first.assignment);
  });
  describe('a quorum shard', () => {
    const nodes = ['a', 'b', 'c', 'd'].map((id) => node(id, id));
    const k = key('quorum');
    const first = placed(placeShard({ key: k, replicationFactor: 3 }, nodes)).assignment;
    const [lead, f1, f2] = first.replicas as [string, string, string];
    const spare = nodes.map((n) => n.nodeId).find((id) => !first.replicas.includes(id))!;
    const without = (dead: string) =>
      nodes.map((n) => (n.nodeId === dead ? { ...n, eligible: false, routable: false } : n));

    it('a_quorum_failover_keeps_every_member_of_the_set_and_changes_only_its_leader', () => {
      const req = {
        key: k,
        replicationFactor: 3,
        current: first,
        failover: { candidates: [f2] },
        quorum: { established: true },
      };
      const next = placed(placeShard(req, without(lead))).assignment;
      // The dead leader stays a member: the new leader's fence must reach a majority of the
      // same three that acked, and an empty broker added now could make up that majority.
      expect(next).toEqual({
        leader: f2,
        replicas: [f2, lead, f1],
        generation: first.generation + 1,
      });
      expect(next.replicas).not.toContain(spare);
      // Without the quorum rule the same step drops the dead leader and tops up with `spare`.
      const free = placed(placeShard({ ...req, quorum: undefined }, without(lead))).assignment;
      expect(free.replicas).toContain(spare);
      expect(free.replicas).not.toContain(lead);
    });

    it('a_quorum_set_drops_and_replaces_a_member_only_under_a_leader_established_at_its_generation', () => {
      const req = { key: k, replicationFactor: 3, current: first, failover: { candidates: [] } };
      // A follower died: the leader has not reported at this generation, so nothing moves.
      const waiting = placeShard({ ...req, quorum: { established: false } }, without(f1));
      expect(placed(waiting)).toMatchObject({ changed: false, assignment: first });
      // Established (it reported, so it fenced and holds every ack): replaced in one step.
      const next = placed(placeShard({ ...req, quorum: { established: true } }, without(f1)));
      expect(next.changed).toBe(true);
      expect(next.assignment.leader).toBe(lead);
      expect(next.assignment.replicas).toEqual([lead, f2, spare]);
      expect(next.assignment.generation).toBe(first.generation + 1);
    });

    it('a_quorum_member_given_up_by_an_operator_leaves_the_set_under_a_leader_not_yet_established', () => {
      // f2 leads after a failover but cannot fence: `lead` and f1 are both dead.
      const promoted = { leader: f2, replicas: [f2, lead, f1], generation: 2 };
      const dead = nodes.map((n) =>
        n.nodeId === lead || n.nodeId === f1 ? { ...n, eligible: false, routable: false } : n,
      );
      const req = { key: k, replicationFactor: 3, current: promoted, failover: { candidates: [] } };
      const stuck = placeShard({ ...req, quorum: { established: false } }, dead);
      expect(placed(stuck).changed).toBe(false);
      // A loss accepted drops that member alone: no empty broker joins in the same step.
      const one = placed(
        placeShard({ ...req, quorum: { established: false, lost: [lead] } }, dead),
      );
      expect(one.assignment).toEqual({ leader: f2, replicas: [f2, f1], generation: 3 });
      const both = placed(
        placeShard(
          {
            ...req,
            current: one.assignment,
            quorum: { established: false, lost: [f1] },
          },
          dead,
        ),
      );
      expect(both.assignment).toEqual({ leader: f2, replicas: [f2], generation: 4 });
    });

    it('a_quorum_member_leaving_is_dropped_while_routable_but_only_under_an_established_leader', () => {
      // `lead` handed off to f1 and left: still routable (its window), no longer eligible.
      const left = nodes.map((n) => (n.nodeId === lead ? { ...n, eligible: false } : n));
      const handed = { leader: f1, replicas: [f1, lead, f2], generation: 2 };
      const req = { key: k, replicationFactor: 3, current: handed, failover: { candidates: [] } };
      const waiting = placeShard({ ...req, quorum: { established: false, leaving: [lead] } }, left);
      expect(placed(waiting)).toMatchObject({ changed: false, assignment: handed });
      const next = placed(
        placeShard({ ...req, quorum: { established: true, leaving: [lead] } }, left),
      );
      expect(next.assignment.leader).toBe(f1);
      expect(next.assignment.replicas).not.toContain(lead);
      expect(next.assignment.replicas).toEqual([f1, f2, spare]);
      // Not named: a routable member stays.
      const kept = placed(placeShard({ ...req, quorum: { established: true } }, left));
      expect(kept.changed).toBe(false);
    });

    it('a_quorum_set_of_one_grows_without_waiting_for_a_report', () => {
      const alone = { leader: lead, replicas: [lead], generation: 1 };
      const req = {
        key: k,
        replicationFactor: 3,
        current: alone,
        failover: { candidates: [] },
        quorum: { established: false },
      };
      const next = placed(placeShard(req, nodes)).assignment;
      expect(next.replicas).toHaveLength(3);
      expect(next.leader).toBe(lead);
    });
  });

  it('a_quorum_set_shrunk_to_two_keeps_its_dead_leader_since_the_survivor_may_lack_what_the_dropped_member_acked', () => {
    // A review proposed letting a set no larger than its ack quorum (two of RF 3) fail over
    // as any shard: every ack at that size needed both members. But acks made before the set
    // shrank needed only a majority of three: the leader and the member since dropped may hold
    // a write the survivor lacks (a cluster test served without it that way). So the survivor
    // waits for the dead leader, as a Raft group of two that lost one does.
    const ns = ['a', 'b', 'c'].map((id) => node(id, id));
    const first = placed(placeShard({ key: key('small'), replicationFactor: 3 }, ns)).assignment;
    const [lead, f1, f2] = first.replicas as [string, string, string];
    const down = (...ids: string[]) =>
      ns.map((n) => (ids.includes(n.nodeId) ? { ...n, eligible: false, routable: false } : n));
    const req = { key: key('small'), replicationFactor: 3, failover: { candidates: [f2] } };
    const shrunk = placed(
      placeShard({ ...req, current: first, quorum: { established: true } }, down(f1)),
    ).assignment;
    expect(shrunk.replicas).toEqual([lead, f2]);
    const next = placed(
      placeShard({ ...req, current: shrunk, quorum: { established: true } }, down(f1, lead)),
    ).assignment;
    expect(next).toEqual({ leader: f2, replicas: [f2, lead], generation: shrunk.generation + 1 });
  });
});
