// An in-memory ProjectionLog for projection tests: segments, seal/trim, and a durability gate a
// test can hold shut to keep writes staged. The store outlives a log instance, so "reopen" keeps
// what was written (a crash can drop what never became durable).
import type { Claim, PortReadResult, PortRecord, ProjectionLog } from '../../src/cache/log-port.js';
import { CommitSequencer } from '../../src/commit-sequencer.js';

const RECORD_FRAMING_BYTES = 28;

export class MemoryLogStore {
  segments: PortRecord[][] = [[]];
  bases: number[] = [0];
  tail = 0;
  durable = 0;
}

export class MemoryLog implements ProjectionLog {
  private gateShut = false;
  private waiters: { next: number; resolve: () => void }[] = [];
  private readonly sequencer: CommitSequencer;

  constructor(readonly store = new MemoryLogStore()) {
    this.sequencer = new CommitSequencer(store.tail);
  }

  get baseOffset(): number {
    return this.store.bases[0]!;
  }
  get tailOffset(): number {
    return this.store.tail;
  }
  /** No floor here: a trim is never held back. */
  readonly trimWaiting = false;
  /** Nothing here fails a flush. */
  readonly poison: Error | undefined = undefined;
  get sizeBytes(): number {
    let n = 0;
    for (const seg of this.store.segments)
      for (const r of seg) n += r.payload.length + RECORD_FRAMING_BYTES;
    return n;
  }

  /** Holds durability: claims made from now on stay staged until `openGate`. */
  shutGate(): void {
    this.gateShut = true;
  }
  openGate(): void {
    this.gateShut = false;
    this.store.durable = this.store.tail;
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w.resolve();
  }
  /** Lets new claims become durable at once while the ones already held stay staged. */
  passNewClaims(): void {
    this.gateShut = false;
  }
  /** Makes staged writes durable newest-first, as a shared flush may finish them in any order. */
  openGateReversed(): void {
    this.gateShut = false;
    this.store.durable = this.store.tail;
    const ws = this.waiters.reverse();
    this.waiters = [];
    for (const w of ws) w.resolve();
  }
  get stagedCount(): number {
    return this.waiters.length;
  }

  /** Appends as replication would: straight to the log, no projection involved. */
  appendRaw(payloads: Uint8Array[]): { first: number; next: number } {
    const r = this.write(payloads);
    this.sequencer.reserve(r.first, r.next).release();
    return r;
  }

  private write(payloads: Uint8Array[]): { first: number; next: number } {
    const first = this.store.tail;
    const seg = this.store.segments[this.store.segments.length - 1]!;
    for (const payload of payloads) {
      seg.push({
        offset: this.store.tail++,
        timestampMicros: Date.now() * 1000,
        payload: payload.slice(),
      });
    }
    if (!this.gateShut) this.store.durable = this.store.tail;
    return { first, next: this.store.tail };
  }

  claim(payloads: Uint8Array[]): Promise<Claim> {
    const { first, next } = this.write(payloads);
    const turn = this.sequencer.reserve(first, next);
    const durable = this.gateShut
      ? new Promise<void>((resolve) => this.waiters.push({ next, resolve }))
      : Promise.resolve();
    return Promise.resolve({ first, next, turn, durable });
  }

  async read(from: number, budget: { maxRecords?: number } = {}): Promise<PortReadResult> {
    if (from < this.baseOffset)
      return { kind: 'trimmed', requested: from, oldest: this.baseOffset };
    const max = budget.maxRecords ?? 10_000;
    const records: PortRecord[] = [];
    for (const seg of this.store.segments) {
      for (const r of seg) {
        if (r.offset >= from && records.length < max) records.push(r);
      }
    }
    const next =
      records.length > 0
        ? records[records.length - 1]!.offset + 1
        : Math.max(from, this.tailOffset);
    return { kind: 'records', records, next };
  }

  async flush(): Promise<void> {
    this.store.durable = this.store.tail;
  }

  async seal(): Promise<number> {
    if (this.store.segments[this.store.segments.length - 1]!.length > 0) {
      this.store.segments.push([]);
      this.store.bases.push(this.store.tail);
    }
    return this.store.tail;
  }

  async trimBelow(cut: number): Promise<void> {
    while (this.store.segments.length > 1 && this.store.bases[1]! <= cut) {
      this.store.segments.shift();
      this.store.bases.shift();
    }
  }

  async close(): Promise<void> {}
}
