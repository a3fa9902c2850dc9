/**
 * Statements over `shard_assignments`: the conditional writes placement relies on (insert if
 * absent, update if the generation is unchanged), the upsert for new resources, removals, and the
 * per-node questions membership asks. No planning here (that is `assignments.ts`).
 */
import type { ShardKind } from '@felix/router';
import { INSERT_BATCH_ROWS } from '../limits.js';
import { type Row, likeMember, num, shardId, str } from './rows.js';
import type { Sql, SqlParam } from './sql.js';
import type { AssignmentRecord } from './types.js';

const COLUMNS =
  'tenant_id, namespace, kind, name, shard, leader, replicas, generation, state, routing, updated_at_ms, floor_generation, floor_base';
const COLUMN_COUNT = 13;

/** An assignment's column values in table order (COLUMN_COUNT of them), stamped `nowMs`. */
function rowParams(a: AssignmentRecord, nowMs: number): SqlParam[] {
  return [
    a.tenant_id,
    a.namespace,
    a.kind,
    a.stream,
    a.shard,
    a.leader,
    JSON.stringify(a.replicas),
    a.generation,
    a.state,
    a.routing ?? null,
    nowMs,
    a.floor_generation ?? 0,
    a.floor_base ?? null,
  ];
}

/** A multi-row VALUES list for `chunk`, stamped `nowMs`, and its parameters. */
function valuesOf(
  chunk: readonly AssignmentRecord[],
  nowMs: number,
): { values: string; params: SqlParam[] } {
  const params: SqlParam[] = [];
  const rows = chunk.map((a) => {
    params.push(...rowParams(a, nowMs));
    const b = params.length - COLUMN_COUNT;
    return `(${Array.from({ length: COLUMN_COUNT }, (_, k) => `$${b + k + 1}`).join(', ')})`;
  });
  return { values: rows.join(', '), params };
}

/** Writes `a` only over the generation it was planned from; false when someone moved first. */
export async function updateAssignmentIf(
  q: Sql,
  a: AssignmentRecord,
  fromGeneration: number,
  nowMs: number,
): Promise<boolean> {
  const rows = await q.query(
    `UPDATE shard_assignments SET leader = $6, replicas = $7, generation = $8, state = $9, routing = $10,
       updated_at_ms = $11, floor_generation = $12, floor_base = $13
     WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4 AND shard = $5 AND generation = $14
     RETURNING shard`,
    [...rowParams(a, nowMs), fromGeneration],
  );
  return rows.length > 0;
}

/** Inserts the assignments no one has written yet; returns those it inserted. */
export async function insertAssignmentsIfAbsent(
  q: Sql,
  fresh: readonly AssignmentRecord[],
  nowMs: number,
): Promise<AssignmentRecord[]> {
  const inserted: AssignmentRecord[] = [];
  for (let i = 0; i < fresh.length; i += INSERT_BATCH_ROWS) {
    const chunk = fresh.slice(i, i + INSERT_BATCH_ROWS);
    const { values, params } = valuesOf(chunk, nowMs);
    const rows = await q.query<Row>(
      `INSERT INTO shard_assignments (${COLUMNS}) VALUES ${values}
       ON CONFLICT (tenant_id, namespace, kind, name, shard) DO NOTHING
       RETURNING tenant_id, namespace, kind, name, shard`,
      params,
    );
    const got = new Set(
      rows.map((r) =>
        shardId(str(r.kind), str(r.tenant_id), str(r.namespace), str(r.name), num(r.shard)),
      ),
    );
    for (const a of chunk) {
      if (got.has(shardId(a.kind, a.tenant_id, a.namespace, a.stream, a.shard))) inserted.push(a);
    }
  }
  return inserted;
}

/** Writes `written` whatever is there (a new resource's shards, inside its creating write). */
export async function upsertAssignments(
  q: Sql,
  written: readonly AssignmentRecord[],
  nowMs: number,
): Promise<void> {
  for (let i = 0; i < written.length; i += INSERT_BATCH_ROWS) {
    const { values, params } = valuesOf(written.slice(i, i + INSERT_BATCH_ROWS), nowMs);
    await q.query(
      `INSERT INTO shard_assignments (${COLUMNS}) VALUES ${values}
       ON CONFLICT (tenant_id, namespace, kind, name, shard) DO UPDATE SET leader = excluded.leader,
         replicas = excluded.replicas, generation = excluded.generation, state = excluded.state,
         routing = excluded.routing, updated_at_ms = excluded.updated_at_ms,
         floor_generation = excluded.floor_generation, floor_base = excluded.floor_base`,
      params,
    );
  }
}

/**
 * Deletes the assignments under `t/ns` (of one resource when `of` is given); returns their keys
 * and generations.
 */
export async function deleteAssignments(
  q: Sql,
  t: string,
  ns: string,
  of?: { kind: ShardKind; name: string },
): Promise<Row[]> {
  const returning = 'RETURNING tenant_id, namespace, kind, name, shard, generation';
  // A shard's replica report goes with its assignment: a re-created resource starts afresh.
  if (!of) {
    await q.query('DELETE FROM replica_reports WHERE tenant_id = $1 AND namespace = $2', [t, ns]);
    return q.query<Row>(
      `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 ${returning}`,
      [t, ns],
    );
  }
  await q.query(
    'DELETE FROM replica_reports WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4',
    [t, ns, of.kind, of.name],
  );
  return q.query<Row>(
    `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4
     ${returning}`,
    [t, ns, of.kind, of.name],
  );
}

/** Deletes an assignment only at the generation it was read at; true when it did. */
export async function deleteAssignmentIf(q: Sql, a: AssignmentRecord): Promise<boolean> {
  const del = await q.query(
    `DELETE FROM shard_assignments WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4
       AND shard = $5 AND generation = $6 RETURNING shard`,
    [a.tenant_id, a.namespace, a.kind, a.stream, a.shard, a.generation],
  );
  if (del.length === 0) return false;
  await q.query(
    `DELETE FROM replica_reports WHERE tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4
       AND shard = $5`,
    [a.tenant_id, a.namespace, a.kind, a.stream, a.shard],
  );
  return true;
}

/** Copies (leader or follower) a node holds. */
export async function copiesHeldBy(q: Sql, nodeId: string): Promise<number> {
  const r = await q.query<Row>(
    "SELECT COUNT(*) AS c FROM shard_assignments WHERE replicas LIKE $1 ESCAPE '\\'",
    [likeMember(nodeId)],
  );
  return num(r[0]?.c ?? 0);
}

/** True when any assignment names the node as leader or replica. */
export async function nodeNamed(q: Sql, nodeId: string): Promise<boolean> {
  const named = await q.query<Row>(
    "SELECT shard FROM shard_assignments WHERE leader = $1 OR replicas LIKE $2 ESCAPE '\\' LIMIT 1",
    [nodeId, likeMember(nodeId)],
  );
  return named.length > 0;
}
