/**
 * Pairs every invoke with its completion and sorts the single-line observations by kind, so
 * each rule reads one prepared index. Problems with the pairing itself are malformed-history.
 */
import type { Findings } from './findings.js';
import type { FinalReadLine, HistoryLine, MetaLine, Phase } from './history.js';

/** One request: its invoke and its completion (none when its process stopped first). */
export interface Op {
  invoke: HistoryLine;
  completion: HistoryLine | undefined;
  /** The completion's phase; an invoke never completed counts as `info` (outcome unknown). */
  outcome: Exclude<Phase, 'invoke'>;
  /** Position of the invoke in the history. */
  position: number;
}

/** Kinds that are single `ok` lines rather than invoke/completion pairs. */
const OBSERVATIONS = new Set([
  'meta',
  'deliver',
  'gap',
  'final_read',
  'cache_final',
  'counter_final',
  'group_final',
]);

export interface HistoryIndex {
  lines: readonly HistoryLine[];
  meta: MetaLine | undefined;
  /** Every request in invoke order. */
  ops: Op[];
  opsByF: Map<string, Op[]>;
  opById: Map<string, Op>;
  /** Single-line observations by kind, in history order. */
  observed: Map<string, HistoryLine[]>;
  /** The final read of each `stream/shard`. */
  finalReads: Map<string, FinalReadLine>;
}

export function shardKey(stream: string, shard: number): string {
  return `${stream}/${shard}`;
}

/** Builds the index, reporting unpaired, doubled or misplaced lines as malformed-history. */
export function indexHistory(lines: readonly HistoryLine[], findings: Findings): HistoryIndex {
  const index: HistoryIndex = {
    lines,
    meta: undefined,
    ops: [],
    opsByF: new Map(),
    opById: new Map(),
    observed: new Map(),
    finalReads: new Map(),
  };
  const ids = new Set<string>();
  lines.forEach((line, position) => {
    if (line.f === 'meta') {
      noteMeta(index, line, position, findings);
    } else if (OBSERVATIONS.has(line.f)) {
      if (ids.has(line.id)) findings.add('malformed-history', `duplicate id ${line.id}`, [line]);
      ids.add(line.id);
      pushTo(index.observed, line.f, line);
      if (line.f === 'final_read') noteFinalRead(index, line, findings);
    } else if (line.phase === 'invoke') {
      if (ids.has(line.id)) findings.add('malformed-history', `duplicate id ${line.id}`, [line]);
      ids.add(line.id);
      const op: Op = { invoke: line, completion: undefined, outcome: 'info', position };
      index.ops.push(op);
      index.opById.set(line.id, op);
      pushTo(index.opsByF, line.f, op);
    } else {
      pairCompletion(index, line, findings);
    }
  });
  if (index.meta === undefined) {
    findings.add('malformed-history', 'the history has no meta line', [lines[0]]);
  }
  checkPending(index, findings);
  return index;
}

function noteMeta(index: HistoryIndex, line: MetaLine, position: number, findings: Findings) {
  if (index.meta !== undefined) {
    findings.add('malformed-history', 'the history has a second meta line', [line]);
    return;
  }
  if (position !== 0) {
    findings.add('malformed-history', `the meta line is line ${position + 1}, not the first`, [
      line,
    ]);
  }
  index.meta = line;
}

function noteFinalRead(index: HistoryIndex, line: FinalReadLine, findings: Findings) {
  const key = shardKey(line.stream, line.shard);
  if (index.finalReads.has(key)) {
    findings.add(
      'malformed-history',
      `two final reads of stream ${line.stream} shard ${line.shard}`,
      [index.finalReads.get(key), line],
    );
    return;
  }
  index.finalReads.set(key, line);
}

function pairCompletion(index: HistoryIndex, line: HistoryLine, findings: Findings) {
  const op = index.opById.get(line.id);
  if (op === undefined) {
    findings.add('malformed-history', `a ${line.phase} of ${line.id} without an invoke before it`, [
      line,
    ]);
    return;
  }
  if (op.completion !== undefined) {
    findings.add('malformed-history', `${line.id} completed twice`, [op.completion, line]);
    return;
  }
  if (op.invoke.f !== line.f || op.invoke.process !== line.process) {
    findings.add(
      'malformed-history',
      `${line.id} was invoked as ${op.invoke.f} by ${op.invoke.process} ` +
        `but completed as ${line.f} by ${line.process}`,
      [op.invoke, line],
    );
    return;
  }
  op.completion = line;
  op.outcome = line.phase as Exclude<Phase, 'invoke'>;
}

/**
 * An invoke never completed is an unknown outcome only when its process simply stopped there;
 * a process that invoked something else afterwards lost a completion line.
 */
function checkPending(index: HistoryIndex, findings: Findings) {
  const lastInvoke = new Map<string, number>();
  for (const op of index.ops) lastInvoke.set(op.invoke.process, op.position);
  for (const op of index.ops) {
    if (op.completion !== undefined) continue;
    if (lastInvoke.get(op.invoke.process) !== op.position) {
      findings.add(
        'malformed-history',
        `${op.invoke.id} (${op.invoke.f}) never completed, yet ${op.invoke.process} went on`,
        [op.invoke],
      );
    }
  }
}

export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Observations of one kind, typed. */
export function observed<T extends HistoryLine>(index: HistoryIndex, f: T['f']): T[] {
  return (index.observed.get(f) ?? []) as T[];
}
