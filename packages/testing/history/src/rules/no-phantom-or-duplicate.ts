/**
 * Rule 4: every value delivered, handed out or finally read was the value of some publish
 * invoke on that stream; and a value sits at more than one offset (across the final reads, or
 * in one reader's deliveries) only as often as it was invoked (a resend, attempt > 1).
 */
import type { Findings } from '../findings.js';
import type { DeliverLine, FinalReadLine, HistoryLine } from '../history.js';
import { type HistoryIndex, observed } from '../index-ops.js';
import type { GroupPollInvoke, GroupPollOk, PublishInvoke } from './types.js';

interface Places {
  offsets: Set<string>;
  lines: HistoryLine[];
}

export function checkNoPhantomOrDuplicate(index: HistoryIndex, findings: Findings): void {
  const invokes = new Map<string, number>();
  for (const op of index.opsByF.get('publish') ?? []) {
    const invoke = op.invoke as PublishInvoke;
    const key = `${invoke.stream}\u0000${invoke.value}`;
    invokes.set(key, (invokes.get(key) ?? 0) + 1);
  }
  const phantoms = new Set<string>();
  const phantom = (stream: string, value: string, where: string, line: HistoryLine) => {
    const key = `${stream}\u0000${value}`;
    if (invokes.has(key) || phantoms.has(key)) return false;
    phantoms.add(key);
    findings.add(
      'no-phantom-or-duplicate',
      `value ${value} at stream ${stream} ${where} was never published`,
      [line],
    );
    return true;
  };
  const finalPlaces = new Map<string, Places>();
  for (const read of observed<FinalReadLine>(index, 'final_read')) {
    read.values.forEach((value, i) => {
      if (value === null) return; // an offset holding no record
      const at = `shard ${read.shard} offset ${read.start + i}`;
      if (phantom(read.stream, value, `${at} (final read)`, read)) return;
      place(finalPlaces, `${read.stream}\u0000${value}`, `${read.shard}/${read.start + i}`, read);
    });
  }
  const readerPlaces = new Map<string, Places>();
  for (const d of observed<DeliverLine>(index, 'deliver')) {
    if (phantom(d.stream, d.value, `shard ${d.shard} offset ${d.offset}`, d)) continue;
    place(
      readerPlaces,
      `${d.stream}\u0000${d.value}\u0000${d.process}`,
      `${d.shard}/${d.offset}`,
      d,
    );
  }
  for (const op of index.opsByF.get('group_poll') ?? []) {
    if (op.outcome !== 'ok') continue;
    const invoke = op.invoke as GroupPollInvoke;
    for (const r of (op.completion as GroupPollOk).records) {
      phantom(
        invoke.stream,
        r.value,
        `shard ${invoke.shard} offset ${r.offset} (handed out)`,
        op.completion as GroupPollOk,
      );
    }
  }
  reportDuplicates(finalPlaces, invokes, 'the final reads', findings);
  reportDuplicates(readerPlaces, invokes, 'one reader', findings);
}

function place(map: Map<string, Places>, key: string, offset: string, line: HistoryLine) {
  let places = map.get(key);
  if (places === undefined) {
    places = { offsets: new Set(), lines: [] };
    map.set(key, places);
  }
  if (places.offsets.has(offset)) return;
  places.offsets.add(offset);
  places.lines.push(line);
}

function reportDuplicates(
  map: Map<string, Places>,
  invokes: Map<string, number>,
  where: string,
  findings: Findings,
) {
  for (const [key, places] of map) {
    const [stream = '', value = '', reader] = key.split('\u0000');
    const count = invokes.get(`${stream}\u0000${value}`) ?? 0;
    if (places.offsets.size <= count) continue;
    const offsets = [...places.offsets].map((o) => o.replace('/', ' offset ')).join(', shard ');
    findings.add(
      'no-phantom-or-duplicate',
      `value ${value} of stream ${stream} appears in ${where}${reader ? ` (${reader})` : ''} at ` +
        `${places.offsets.size} offsets (shard ${offsets}) but was published ${count} time(s)`,
      places.lines,
    );
  }
}
