/**
 * Rule 2: every observation of one (stream, shard, offset) names the same value: publish acks
 * (with their invoke's value), deliveries, group hand-outs and final reads.
 */
import type { Findings } from '../findings.js';
import type { DeliverLine, FinalReadLine, HistoryLine } from '../history.js';
import { type HistoryIndex, observed } from '../index-ops.js';
import type { GroupPollInvoke, GroupPollOk, PublishInvoke, PublishOk } from './types.js';

interface Seen {
  value: string;
  lines: HistoryLine[];
}

export function checkOffsetAgreement(index: HistoryIndex, findings: Findings): void {
  const seen = new Map<string, Seen>();
  const reported = new Set<string>();
  const observe = (
    stream: string,
    shard: number,
    offset: number,
    value: string,
    lines: HistoryLine[],
  ) => {
    const key = `${stream}/${shard}/${offset}`;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, { value, lines });
      return;
    }
    if (first.value === value || reported.has(`${key}/${value}`)) return;
    reported.add(`${key}/${value}`);
    findings.add(
      'offset-agreement',
      `stream ${stream} shard ${shard} offset ${offset} holds ${first.value} and also ${value}`,
      [...first.lines, ...lines],
    );
  };
  for (const op of index.opsByF.get('publish') ?? []) {
    if (op.outcome !== 'ok') continue;
    const invoke = op.invoke as PublishInvoke;
    const ok = op.completion as PublishOk;
    observe(invoke.stream, ok.shard, ok.offset, invoke.value, [invoke, ok]);
  }
  for (const d of observed<DeliverLine>(index, 'deliver')) {
    observe(d.stream, d.shard, d.offset, d.value, [d]);
  }
  for (const op of index.opsByF.get('group_poll') ?? []) {
    if (op.outcome !== 'ok') continue;
    const invoke = op.invoke as GroupPollInvoke;
    for (const r of (op.completion as GroupPollOk).records) {
      observe(invoke.stream, invoke.shard, r.offset, r.value, [op.completion as GroupPollOk]);
    }
  }
  for (const read of observed<FinalReadLine>(index, 'final_read')) {
    read.values.forEach((value, i) => {
      if (value !== null) observe(read.stream, read.shard, read.start + i, value, [read]);
    });
  }
}
