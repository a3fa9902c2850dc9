/**
 * Replica reports: what each shard's leader last said its replicas hold (generation, the
 * leader's own offset, the commit mark, each follower's confirmed offset, halted followers).
 * Placement reads them to choose whom to promote when a leader is lost. A report is believed
 * only from the shard's current leader at its current generation (checked inside the write, so
 * a deposed leader's late report is refused), and only moves forward: at the same generation it
 * is merged into the stored one (offsets take the higher value, halts accumulate), and an older
 * generation's report is refused as stale. A leader numbers its reports (`seq`, per incarnation):
 * one older than the stored one from the same incarnation (a request it gave up on, applied
 * late) is refused as stale too, so it cannot take back what a newer report said.
 */
import { NodeNotFoundError, NotRegisteredError, StaleIncarnationError } from '../errors.js';
import { updateAssignmentIf } from './assignment-rows.js';
import { CACHES, STREAMS } from './catalog-kinds.js';
import { type Row, assignmentKeyOf, assignmentOf, num, shardId, str } from './rows.js';
import type { Sql } from './sql.js';
import type { Transactions, Write } from './transaction.js';
import type {
  AssignmentKey,
  AssignmentRecord,
  HaltReason,
  ReplicaReport,
  ReportOutcome,
} from './types.js';

/** One shard's report as a broker sends it (the store adds the leader and the stamp). */
export type ReportInput = Omit<ReplicaReport, 'leader' | 'reported_at_ms'>;

/** Which incarnation of the reporting node sent a request, and its number (when it numbers). */
interface Reporter {
  incarnation: number;
  seq?: number | undefined;
}

const KEY_WHERE = 'tenant_id = $1 AND namespace = $2 AND kind = $3 AND name = $4 AND shard = $5';

function keyParams(k: AssignmentKey): [string, string, string, string, number] {
  return [k.tenant_id, k.namespace, k.kind, k.stream, k.shard];
}

export function reportOf(r: Row): ReplicaReport {
  return {
    tenant_id: str(r.tenant_id),
    namespace: str(r.namespace),
    kind: str(r.kind) as ReplicaReport['kind'],
    stream: str(r.name),
    shard: num(r.shard),
    generation: num(r.generation),
    leader: str(r.leader),
    leader_offset: num(r.leader_offset),
    commit_offset: num(r.commit_offset),
    replica_offsets: JSON.parse(str(r.offsets)) as ReplicaReport['replica_offsets'],
    halted: JSON.parse(str(r.halted)) as ReplicaReport['halted'],
    drained: num(r.drained) === 1,
    caught_up: JSON.parse(str(r.caught_up)) as string[],
    in_sync: JSON.parse(str(r.in_sync)) as string[],
    reported_at_ms: num(r.reported_at_ms),
  };
}

/**
 * `next` folded into `prev` of the same log (foldReport): nothing a report said is taken back (except
 * `drained`, `caught_up` and `in_sync`, which describe the leader's state now and come from
 * `next`: a follower in sync once may have fallen out of the lag window since), unless the
 * leader says it rebuilt a follower (`rebuilt`): that follower's copy was discarded, so its halt
 * and what it was known to hold go, and it holds what `next` says (at least the base).
 */
export function mergeReports(prev: ReplicaReport, next: ReplicaReport): ReplicaReport {
  const rebuilt = new Map((next.rebuilt ?? []).map((r) => [r.node_id, r.base]));
  const offsets = new Map(
    prev.replica_offsets
      .filter((o) => !rebuilt.has(o.node_id))
      .map((o) => [o.node_id, o.durable_offset]),
  );
  for (const [node, base] of rebuilt) offsets.set(node, base);
  for (const o of next.replica_offsets)
    offsets.set(o.node_id, Math.max(offsets.get(o.node_id) ?? 0, o.durable_offset));
  const halted = new Map<string, HaltReason>(
    prev.halted.filter((h) => !rebuilt.has(h.node_id)).map((h) => [h.node_id, h.reason]),
  );
  for (const h of next.halted) halted.set(h.node_id, h.reason);
  const { rebuilt: _applied, ...rest } = next;
  return {
    ...rest,
    leader_offset: Math.max(prev.leader_offset, next.leader_offset),
    commit_offset: Math.max(prev.commit_offset, next.commit_offset),
    replica_offsets: [...offsets].map(([node_id, durable_offset]) => ({ node_id, durable_offset })),
    halted: [...halted].map(([node_id, reason]) => ({ node_id, reason })),
  };
}

/**
 * What is stored once `next` is accepted over `prev`: merged when both are of one generation, or
 * when `next` is the same leader's next generation (a change of its follower set only: the leader
 * restarts its shippers, whose first reports say 0 until each follower answers, yet nothing its
 * followers confirmed is gone, and a bound taken from such a report would let a replica behind
 * the commit mark qualify); `next` alone otherwise (another leader's log).
 */
export function foldReport(prev: ReplicaReport | undefined, next: ReplicaReport): ReplicaReport {
  if (prev === undefined) return withoutRebuilt(next);
  const sameLog =
    prev.generation === next.generation ||
    (prev.leader === next.leader && prev.generation === next.generation - 1);
  return sameLog ? mergeReports(prev, next) : withoutRebuilt(next);
}

/** The report as stored: `rebuilt` is applied, not kept. */
function withoutRebuilt(r: ReplicaReport): ReplicaReport {
  const { rebuilt: _applied, uid: _checked, ...rest } = r;
  return rest;
}

/** Refuses a reporter that is not the node's current, live incarnation (as a heartbeat would). */
async function checkReporter(q: Sql, nodeId: string, incarnation: number): Promise<void> {
  const rows = await q.query<Row>('SELECT lifecycle, incarnation FROM nodes WHERE node_id = $1', [
    nodeId,
  ]);
  const cur = rows[0];
  if (!cur) throw new NodeNotFoundError(`node ${nodeId} is not registered`);
  const inc = num(cur.incarnation);
  if (incarnation < inc) throw new StaleIncarnationError(nodeId, incarnation, inc);
  if (incarnation > inc)
    throw new NotRegisteredError(`node ${nodeId} never registered incarnation ${incarnation}`);
  const life = str(cur.lifecycle);
  if (life !== 'live' && life !== 'draining')
    throw new NotRegisteredError(`node ${nodeId} is ${life}: re-register with a newer incarnation`);
}

/** The stored report and who sent it (incarnation 0 and seq 0 when unknown or unnumbered). */
interface Stored {
  report: ReplicaReport;
  incarnation: number;
  seq: number;
}

async function storedReport(q: Sql, k: AssignmentKey): Promise<Stored | undefined> {
  const rows = await q.query<Row>(`SELECT * FROM replica_reports WHERE ${KEY_WHERE}`, keyParams(k));
  const r = rows[0];
  if (!r) return undefined;
  return { report: reportOf(r), incarnation: num(r.reporter_incarnation), seq: num(r.report_seq) };
}

/** Whether `from`'s report is older than the stored one: the same incarnation sent it, earlier. */
function outOfOrder(prev: Stored, nodeId: string, from: Reporter): boolean {
  return (
    from.seq !== undefined &&
    prev.report.leader === nodeId &&
    prev.incarnation === from.incarnation &&
    from.seq <= prev.seq
  );
}

async function upsertReport(q: Sql, r: ReplicaReport, from: Reporter): Promise<void> {
  await q.query(
    `INSERT INTO replica_reports (tenant_id, namespace, kind, name, shard, generation, leader,
       leader_offset, commit_offset, offsets, halted, reported_at_ms, drained, caught_up, in_sync,
       reporter_incarnation, report_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
     ON CONFLICT (tenant_id, namespace, kind, name, shard) DO UPDATE SET
       generation = excluded.generation, leader = excluded.leader,
       leader_offset = excluded.leader_offset, commit_offset = excluded.commit_offset,
       offsets = excluded.offsets, halted = excluded.halted, reported_at_ms = excluded.reported_at_ms,
       drained = excluded.drained, caught_up = excluded.caught_up, in_sync = excluded.in_sync,
       reporter_incarnation = excluded.reporter_incarnation, report_seq = excluded.report_seq
     WHERE NOT (excluded.leader = replica_reports.leader
       AND excluded.reporter_incarnation = replica_reports.reporter_incarnation
       AND excluded.report_seq > 0 AND excluded.report_seq <= replica_reports.report_seq)`,
    [
      ...keyParams(r),
      r.generation,
      r.leader,
      r.leader_offset,
      r.commit_offset,
      JSON.stringify(r.replica_offsets),
      JSON.stringify(r.halted),
      r.reported_at_ms,
      r.drained ? 1 : 0,
      JSON.stringify(r.caught_up),
      JSON.stringify(r.in_sync),
      from.incarnation,
      from.seq ?? 0,
    ],
  );
}

/** Judges and (when accepted) stores one shard's report, inside the caller's transaction. */
async function recordOne(
  q: Sql,
  nodeId: string,
  from: Reporter,
  input: ReportInput,
  nowMs: number,
  /** Set when the report is its leader's first at the assignment's generation (established). */
  news?: { established: boolean },
): Promise<ReportOutcome> {
  const rows = await q.query<Row>(
    `SELECT leader, generation FROM shard_assignments WHERE ${KEY_WHERE}`,
    keyParams(input),
  );
  const a = rows[0];
  if (!a) return 'unassigned';
  const generation = num(a.generation);
  if (input.generation > generation) return 'future_generation';
  if (input.generation < generation) return 'stale';
  if (str(a.leader) !== nodeId) return 'not_leader';
  const report: ReplicaReport = { ...input, leader: nodeId, reported_at_ms: nowMs };
  // The stored row is locked before it is read (a write that changes nothing: Postgres holds the
  // row until this transaction ends; SQLite's writes are one at a time anyway), so a report
  // applied late cannot read it, wait for a newer one to commit, then write over it; a shard's
  // first report has no row to lock, and the upsert's own condition refuses the older there.
  await q.query(
    `UPDATE replica_reports SET report_seq = report_seq WHERE ${KEY_WHERE}`,
    keyParams(input),
  );
  const prev = await storedReport(q, input);
  if (prev !== undefined && prev.report.generation > input.generation) return 'stale';
  if (prev !== undefined && outOfOrder(prev, nodeId, from)) return 'stale';
  await upsertReport(q, foldReport(prev?.report, report), from);
  const first = prev === undefined || prev.report.generation < input.generation;
  if (news !== undefined && first) news.established = true;
  return 'accepted';
}

/**
 * A broker leads a shard at a generation newer than its assignment, or at the assignment's own
 * generation where the assignment names another leader: the control plane's database went back in
 * time (restored from a backup, docs/operations.md "Backups") while the brokers went on, and
 * generations name one leader each. The assignment moves one past the reported generation, led
 * by the reporter over the followers its report names (the set that acknowledged there, not the
 * restored one), and the report is stored, so placement has its bound should it die before it
 * reports again. It goes on leading (its log holds every ack it made); any other broker leading
 * the same shard sees a newer generation naming someone else and steps down.
 */
async function moveAssignmentPast(w: Write, nodeId: string, from: Reporter, r: ReportInput) {
  const rows = await w.q.query<Row>(
    `SELECT * FROM shard_assignments WHERE ${KEY_WHERE}`,
    keyParams(r),
  );
  if (rows.length === 0) return;
  const was = assignmentOf(rows[0]!);
  if (was.generation > r.generation) return;
  // A report of an earlier creation of the name (deleted and created again meanwhile, its
  // generations started over) must not move the new one: only the catalog's current creation.
  if (r.uid === undefined || r.uid === '' || r.uid !== (await catalogUid(w.q, r))) return;
  const followers = [...new Set(r.replica_offsets.map((o) => o.node_id))].filter(
    (id) => id !== nodeId,
  );
  const next: AssignmentRecord = {
    ...was,
    leader: nodeId,
    replicas: [nodeId, ...followers],
    generation: r.generation + 1,
  };
  if (!(await updateAssignmentIf(w.q, next, was.generation, w.nowMs()))) return;
  w.change('assignments', 'updated', assignmentKeyOf(next), next);
  const prev = await storedReport(w.q, r);
  const report: ReplicaReport = { ...r, leader: nodeId, reported_at_ms: w.nowMs() };
  // Another leader's stored report is another log: not merged.
  const own = prev?.report.leader === nodeId ? prev.report : undefined;
  await upsertReport(w.q, foldReport(own, report), from);
}

/** The catalog's creation id of the report's stream or cache (undefined: not in the catalog). */
async function catalogUid(q: Sql, k: AssignmentKey): Promise<string | undefined> {
  const { table, nameCol } = k.kind === 'cache' ? CACHES : STREAMS;
  const rows = await q.query<Row>(
    `SELECT uid FROM ${table} WHERE tenant_id = $1 AND namespace = $2 AND ${nameCol} = $3`,
    [k.tenant_id, k.namespace, k.stream],
  );
  return rows[0] === undefined ? undefined : str(rows[0].uid);
}

export class ReplicaReportRepository {
  constructor(private readonly tx: Transactions) {}

  /**
   * Records a node's reports in one transaction: the reporter must be the node's current live
   * incarnation (else the whole request is refused, like a heartbeat); each shard then gets its
   * own outcome, and only `accepted` ones change what is stored. `seq` numbers the reporter's
   * requests within its incarnation (absent from a broker that does not number them).
   */
  async record(nodeId: string, incarnation: number, reports: readonly ReportInput[], seq?: number) {
    return (await this.recordTelling(nodeId, incarnation, reports, seq)).outcomes;
  }

  /** As `record`, and whether a report was its leader's first at its generation: the leader is
   *  now established, so placement may change its quorum set (a pass is due). */
  recordTelling(
    nodeId: string,
    incarnation: number,
    reports: readonly ReportInput[],
    seq?: number,
  ) {
    const from: Reporter = { incarnation, seq };
    return this.tx.write(async (w) => {
      const news = { established: false };
      await checkReporter(w.q, nodeId, incarnation);
      const outcomes: ReportOutcome[] = [];
      for (const r of reports) {
        const outcome = await recordOne(w.q, nodeId, from, r, w.nowMs(), news);
        // `not_leader` is at the assignment's own generation: another leader claims it.
        if (outcome === 'future_generation' || outcome === 'not_leader')
          await moveAssignmentPast(w, nodeId, from, r);
        outcomes.push(outcome);
      }
      return { outcomes, established: news.established };
    });
  }

  /** Every stored report, at most `limit`, in key order. */
  async list(limit: number): Promise<ReplicaReport[]> {
    const rows = await this.tx.driver.query<Row>(
      `SELECT * FROM replica_reports ORDER BY tenant_id, namespace, kind, name, shard LIMIT $1`,
      [limit],
    );
    return rows.map(reportOf);
  }
}

/** Every stored report by `shardId` (placement reads them inside its pass). */
export async function reportsByShard(q: Sql): Promise<Map<string, ReplicaReport>> {
  const out = new Map<string, ReplicaReport>();
  for (const r of await q.query<Row>('SELECT * FROM replica_reports')) {
    const rep = reportOf(r);
    out.set(shardId(rep.kind, rep.tenant_id, rep.namespace, rep.stream, rep.shard), rep);
  }
  return out;
}
