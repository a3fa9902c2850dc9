/**
 * Rule 1: every publish acknowledged ok is in its shard's final read, at the offset its ack
 * named. Offsets below the final read's start were trimmed by retention and are not checked;
 * in-memory streams may lose records to a restart and are not checked either.
 */
import type { Findings } from '../findings.js';
import { type HistoryIndex, shardKey } from '../index-ops.js';
import type { PublishInvoke, PublishOk } from './types.js';

export function checkAckedPublishPresent(index: HistoryIndex, findings: Findings): void {
  const durable = new Set(index.meta?.streams.filter((s) => s.durable).map((s) => s.name));
  const acked = new Set<string>();
  for (const op of index.opsByF.get('publish') ?? []) {
    if (op.outcome !== 'ok') continue;
    const invoke = op.invoke as PublishInvoke;
    const ok = op.completion as PublishOk;
    if (index.meta !== undefined && !durable.has(invoke.stream)) continue;
    acked.add(invoke.stream);
    const read = index.finalReads.get(shardKey(invoke.stream, ok.shard));
    if (read === undefined || ok.offset < read.start) continue;
    const where = `stream ${invoke.stream} shard ${ok.shard} offset ${ok.offset}`;
    const found = read.values[ok.offset - read.start];
    if (found === undefined) {
      findings.add(
        'acked-publish-present',
        `acknowledged value ${invoke.value} at ${where} is missing: the final read ends at ` +
          `offset ${read.start + read.values.length}`,
        [invoke, ok, read],
      );
    } else if (found !== invoke.value) {
      findings.add(
        'acked-publish-present',
        `acknowledged value ${invoke.value} at ${where} is not in the final read, ` +
          `which has ${found} there`,
        [invoke, ok, read],
      );
    }
  }
  checkFinalReadsComplete(index, acked, findings);
}

/** Every shard of a stream with acked publishes needs a final read, or nothing can be judged. */
function checkFinalReadsComplete(index: HistoryIndex, acked: Set<string>, findings: Findings) {
  for (const stream of acked) {
    const shards = index.meta?.streams.find((s) => s.name === stream)?.shards;
    if (shards === undefined) {
      findings.add('malformed-history', `stream ${stream} was published to but is not in meta`, [
        index.meta,
      ]);
      continue;
    }
    for (let shard = 0; shard < shards; shard++) {
      if (index.finalReads.has(shardKey(stream, shard))) continue;
      findings.add(
        'malformed-history',
        `incomplete final read: stream ${stream} shard ${shard} had acked publishes ` +
          'but no final_read',
        [index.meta],
      );
    }
  }
}
