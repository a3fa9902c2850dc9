/**
 * The newest written records of a log kept in memory (copies of their payloads), so a reader
 * at the tail (a leader's shipper, which reads each record right after it is written) is
 * answered without a read of the segment file. Off until `keep` is given a bound; the oldest
 * records go first once the bytes kept pass it (a group's copy is one buffer, freed once its
 * last record goes: at most one group more than the bound stays in memory). A record keeps its flag bits (a generation
 * start), so a kept record is what `readWritten` of the file would return.
 */
import { RECENT_RECORDS_BYTES_MAX } from '../limits.js';
import type { LogRecord } from '../segment/reader.js';

export class RecentRecords {
  private maxBytes = 0;
  private records: Array<LogRecord | undefined> = [];
  private head = 0;
  private bytes = 0;

  /** Keeps up to `maxBytes` (at most RECENT_RECORDS_BYTES_MAX) of payloads from now on (0:
   *  none, and drops what is kept). */
  keep(maxBytes: number): void {
    this.maxBytes = Math.min(RECENT_RECORDS_BYTES_MAX, Math.max(0, maxBytes));
    if (this.maxBytes === 0) this.clear();
    else this.evict();
  }

  /** Offsets [first, next) were just written with these payloads, this append time and, when
   *  any is set, these flag bits per record. */
  add(
    first: number,
    payloads: readonly Uint8Array[],
    timestampMicros: number,
    flags?: readonly number[],
  ): void {
    if (this.maxBytes === 0) return;
    // A gap (a write this buffer missed) would answer a range wrongly: start over.
    if (this.size > 0 && this.end !== first) this.clear();
    // Copied (the caller's arrays may be views of larger buffers, or be reused), into one
    // buffer per group: an allocation per record cost the leader more than the copy.
    let total = 0;
    for (const p of payloads) total += p.length;
    const copy = new Uint8Array(total);
    let at = 0;
    let offset = first;
    for (const [i, p] of payloads.entries()) {
      copy.set(p, at);
      const payload = copy.subarray(at, at + p.length);
      at += p.length;
      this.records.push({ offset, timestampMicros, flags: flags?.[i] ?? 0, payload });
      this.bytes += p.length;
      offset++;
    }
    this.evict();
  }

  /**
   * Records from `from` below `limit`, at least one when one is kept, then up to the budgets;
   * null when `from` is not kept (older, or no record at all is kept from there).
   */
  read(from: number, limit: number, maxRecords: number, maxBytes: number): LogRecord[] | null {
    if (this.size === 0) return null;
    const start = this.records[this.head]!.offset;
    if (from < start || from >= this.end || from >= limit) return null;
    const out: LogRecord[] = [];
    let taken = 0;
    for (let i = this.head + (from - start); i < this.records.length; i++) {
      const r = this.records[i]!;
      if (r.offset >= limit || out.length >= maxRecords) break;
      if (out.length > 0 && taken + r.payload.length > maxBytes) break;
      out.push(r);
      taken += r.payload.length;
    }
    return out;
  }

  private get size(): number {
    return this.records.length - this.head;
  }

  /** One past the newest kept offset. */
  private get end(): number {
    return this.records[this.records.length - 1]!.offset + 1;
  }

  private evict(): void {
    while (this.bytes > this.maxBytes && this.size > 0) {
      this.bytes -= this.records[this.head]!.payload.length;
      this.records[this.head] = undefined;
      this.head++;
    }
    if (this.size === 0) this.clear();
    else if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.head = 0;
    }
  }

  private clear(): void {
    this.records = [];
    this.head = 0;
    this.bytes = 0;
  }
}
