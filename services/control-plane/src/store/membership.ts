/**
 * Membership: the nodes, their incarnations, lifecycles and heartbeat stamps. Every stamp comes
 * from the store's injected clock. Lifecycle changes emit no change row: brokers learn of them
 * through assignments, which placement rewrites.
 */
import {
  AddressInUseError,
  NodeNotFoundError,
  NodeStateConflictError,
  NotRegisteredError,
  StaleIncarnationError,
} from '../errors.js';
import { copiesHeldBy, nodeNamed } from './assignment-rows.js';
import { page } from './paging.js';
import { type Row, livenessOf, nodeOf, num, str } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import type { Transactions } from './transaction.js';
import type { Lifecycle, NodeLiveness, NodeRecord, Page, RegisterInput } from './types.js';

/** The node rows placement reads (liveness applied later, by the caller's view). */
export async function livenessRows(q: Sql): Promise<NodeLiveness[]> {
  const rows = await q.query<Row>(
    `SELECT node_id, zone, lifecycle, last_heartbeat_at_ms, capacity_max_shards, durable_storage,
       registered_at_ms
     FROM nodes`,
  );
  return rows.map(livenessOf);
}

async function findNode(q: Sql, nodeId: string): Promise<NodeRecord | undefined> {
  const r = await q.query<Row>('SELECT * FROM nodes WHERE node_id = $1', [nodeId]);
  return r[0] ? nodeOf(r[0]) : undefined;
}

interface Registration {
  lifecycle: Lifecycle;
  registeredAtMs: number;
  revived: boolean;
}

/**
 * What a registration becomes given the node's current row: a newer incarnation (or a first
 * registration) starts live and counts as revived; the same incarnation keeps its lifecycle
 * unless the node is down or left, which needs a newer one; an older one is refused.
 */
function registrationOf(req: RegisterInput, cur: Row | undefined, nowMs: number): Registration {
  if (!cur) return { lifecycle: 'live', registeredAtMs: nowMs, revived: true };
  const inc = num(cur.incarnation);
  const life = str(cur.lifecycle) as Lifecycle;
  if (req.incarnation < inc) throw new StaleIncarnationError(req.node_id, req.incarnation, inc);
  if (req.incarnation > inc) return { lifecycle: 'live', registeredAtMs: nowMs, revived: true };
  if (life === 'down' || life === 'left') {
    throw new NotRegisteredError(
      `node ${req.node_id} is ${life}: re-register with a newer incarnation`,
    );
  }
  return { lifecycle: life, registeredAtMs: num(cur.registered_at_ms), revived: false };
}

async function upsertNode(
  q: Sql,
  req: RegisterInput,
  reg: Registration,
  nowMs: number,
): Promise<void> {
  const params: SqlParam[] = [
    req.node_id,
    req.advertise_addr,
    req.client_addr,
    req.region,
    req.zone,
    JSON.stringify(req.labels),
    req.capacity.max_shards,
    req.capacity.weight,
    reg.lifecycle,
    req.incarnation,
    nowMs,
    reg.registeredAtMs,
    req.durable_storage === false ? 0 : 1,
  ];
  try {
    await q.query(
      `INSERT INTO nodes (node_id, advertise_addr, client_addr, region, zone, labels, capacity_max_shards,
         capacity_weight, lifecycle, incarnation, last_heartbeat_at_ms, registered_at_ms,
         durable_storage)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (node_id) DO UPDATE SET advertise_addr = excluded.advertise_addr,
         client_addr = excluded.client_addr, region = excluded.region, zone = excluded.zone,
         labels = excluded.labels, capacity_max_shards = excluded.capacity_max_shards,
         capacity_weight = excluded.capacity_weight, lifecycle = excluded.lifecycle,
         incarnation = excluded.incarnation, last_heartbeat_at_ms = excluded.last_heartbeat_at_ms,
         registered_at_ms = excluded.registered_at_ms, durable_storage = excluded.durable_storage`,
      params,
    );
  } catch (err) {
    // The address check above reads before writing: a concurrent registration can still take
    // the address first, and the unique index is what tells us.
    if (/unique|constraint/i.test(String((err as Error).message))) {
      throw new AddressInUseError(`${req.advertise_addr} was taken by a concurrent registration`, {
        cause: err,
      });
    }
    throw err;
  }
}

export class MembershipRepository {
  constructor(private readonly tx: Transactions) {}

  /**
   * Registers a node or re-registers it. An older incarnation is refused; re-registering a down
   * or departed node needs a newer incarnation, which revives it as live.
   */
  register(req: RegisterInput): Promise<{ node: NodeRecord; revived: boolean }> {
    return this.tx.write(async (w) => {
      const owner = await w.q.query<Row>(
        'SELECT node_id FROM nodes WHERE advertise_addr = $1 AND node_id <> $2',
        [req.advertise_addr, req.node_id],
      );
      if (owner.length > 0) {
        throw new AddressInUseError(
          `${req.advertise_addr} is advertised by node ${str(owner[0]!.node_id)}`,
        );
      }
      const rows = await w.q.query<Row>(
        'SELECT lifecycle, incarnation, registered_at_ms FROM nodes WHERE node_id = $1',
        [req.node_id],
      );
      const nowMs = w.nowMs();
      const reg = registrationOf(req, rows[0], nowMs);
      await upsertNode(w.q, req, reg, nowMs);
      const node = await findNode(w.q, req.node_id);
      return { node: node!, revived: reg.revived };
    });
  }

  /**
   * Renews a node's stamp to `stampMs` (by default the store's clock now: the caller may take it
   * first, to tell the sweep which stamp it accepted). Refuses an older incarnation (409) and a
   * newer one it never saw; a down or departed node is told its lifecycle and must re-register.
   */
  async heartbeat(
    nodeId: string,
    incarnation: number,
    stampMs = this.tx.clock.nowMs(),
  ): Promise<Lifecycle> {
    const driver = this.tx.driver;
    const hit = await driver.queryRelaxed<Row>(
      `UPDATE nodes SET last_heartbeat_at_ms = $3
       WHERE node_id = $1 AND incarnation = $2 AND lifecycle IN ('live', 'draining') RETURNING lifecycle`,
      [nodeId, incarnation, stampMs],
    );
    if (hit[0]) return str(hit[0].lifecycle) as Lifecycle;
    const rows = await driver.query<Row>(
      'SELECT lifecycle, incarnation FROM nodes WHERE node_id = $1',
      [nodeId],
    );
    const cur = rows[0];
    if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
    const inc = num(cur.incarnation);
    if (incarnation < inc) throw new StaleIncarnationError(nodeId, incarnation, inc);
    if (incarnation > inc)
      throw new NotRegisteredError(`node ${nodeId} never registered incarnation ${incarnation}`);
    return str(cur.lifecycle) as Lifecycle;
  }

  drain(nodeId: string): Promise<NodeRecord> {
    return this.setLifecycle(nodeId, 'draining', ['live']);
  }

  deregister(nodeId: string): Promise<NodeRecord> {
    return this.setLifecycle(nodeId, 'left', ['live', 'draining', 'down']);
  }

  private setLifecycle(
    nodeId: string,
    to: Lifecycle,
    from: readonly Lifecycle[],
  ): Promise<NodeRecord> {
    return this.tx.write(async (w) => {
      const cur = await findNode(w.q, nodeId);
      if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
      if (cur.status.lifecycle === to) return cur;
      if (!from.includes(cur.status.lifecycle)) {
        throw new NodeStateConflictError(
          `node ${nodeId} is ${cur.status.lifecycle}; cannot become ${to}`,
        );
      }
      await w.q.query('UPDATE nodes SET lifecycle = $2 WHERE node_id = $1', [nodeId, to]);
      return { ...cur, status: { ...cur.status, lifecycle: to } };
    });
  }

  /** Deletes a node that is neither live nor draining and is named in no assignment. */
  delete(nodeId: string): Promise<void> {
    return this.tx.write(async (w) => {
      const cur = await findNode(w.q, nodeId);
      if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
      if (cur.status.lifecycle === 'live' || cur.status.lifecycle === 'draining') {
        throw new NodeStateConflictError(`node ${nodeId} is ${cur.status.lifecycle}`);
      }
      if (await nodeNamed(w.q, nodeId))
        throw new NodeStateConflictError(`node ${nodeId} still holds shards`);
      await w.q.query('DELETE FROM nodes WHERE node_id = $1', [nodeId]);
    });
  }

  async get(nodeId: string): Promise<NodeRecord> {
    const node = await findNode(this.tx.driver, nodeId);
    if (!node) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
    return node;
  }

  list(limit: number, cursor?: string, lifecycle?: Lifecycle): Promise<Page<NodeRecord>> {
    return page(this.tx.driver, {
      select: 'SELECT * FROM nodes',
      fixedWhere: lifecycle ? ['lifecycle = $1'] : [],
      fixed: lifecycle ? [lifecycle] : [],
      keyCols: ['node_id'],
      shape: ['s'],
      limit,
      cursor,
      map: nodeOf,
      keyOf: (r) => [str(r.node_id)],
    });
  }

  /** Every node (placement needs the whole list; NODES_MAX in @felix/router bounds it). */
  async all(): Promise<NodeRecord[]> {
    return (await this.tx.driver.query<Row>('SELECT * FROM nodes ORDER BY node_id')).map(nodeOf);
  }

  /** Copies (leader or follower) a node holds: its load against `max_shards`. */
  copiesHeldBy(nodeId: string): Promise<number> {
    return copiesHeldBy(this.tx.driver, nodeId);
  }

  /** Every live or draining node's heartbeat stamp (the sweep's input). */
  async liveStamps(): Promise<{ node_id: string; stamp: number }[]> {
    const rows = await this.tx.driver.query<Row>(
      "SELECT node_id, last_heartbeat_at_ms FROM nodes WHERE lifecycle IN ('live', 'draining')",
    );
    return rows.map((r) => ({ node_id: str(r.node_id), stamp: num(r.last_heartbeat_at_ms) }));
  }

  /** Marks a node down only if its stamp is still the one the sweep judged silent. */
  async markDown(nodeId: string, stamp: number): Promise<boolean> {
    const rows = await this.tx.driver.query(
      `UPDATE nodes SET lifecycle = 'down'
       WHERE node_id = $1 AND last_heartbeat_at_ms = $2 AND lifecycle IN ('live', 'draining') RETURNING node_id`,
      [nodeId, stamp],
    );
    return rows.length > 0;
  }
}
