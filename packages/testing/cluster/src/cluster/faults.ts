/**
 * The broker's test fault files (docs/reliability.md, "Fault seams in the broker"): who each
 * broker cannot reach, and how its fsyncs misbehave. Files are replaced whole (write, rename) so
 * the broker never reads half a file.
 */
import { rename, writeFile } from 'node:fs/promises';
import { FAULT_FILE_SETTLE_MS, scaled } from '../limits.js';
import type { Broker } from './broker.js';

export const CONTROLPLANE = 'controlplane';

async function replace(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

/** The broker re-reads its files every 50 ms: after this wait a written fault is in force. */
export function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, scaled(FAULT_FILE_SETTLE_MS)));
}

/** Partitions as cut links: each broker's set of peers (node ids or `controlplane`). */
export class Partitions {
  private readonly cuts = new Map<string, Set<string>>();

  constructor(private readonly brokers: readonly Broker[]) {}

  /** Cuts `a` from `b` both ways (`b` the control plane: only `a`'s file names it). */
  async cut(a: Broker, b: Broker | typeof CONTROLPLANE): Promise<void> {
    if (b === CONTROLPLANE) {
      this.add(a.id, CONTROLPLANE);
      await this.write(a);
      return;
    }
    this.add(a.id, `node:${b.id}`);
    this.add(b.id, `node:${a.id}`);
    await Promise.all([this.write(a), this.write(b)]);
  }

  /** Empties every broker's partition file. */
  async heal(): Promise<void> {
    this.cuts.clear();
    await Promise.all(this.brokers.map((b) => this.write(b)));
  }

  private add(id: string, line: string): void {
    const set = this.cuts.get(id) ?? new Set<string>();
    set.add(line);
    this.cuts.set(id, set);
  }

  private write(b: Broker): Promise<void> {
    const lines = [...(this.cuts.get(b.id) ?? [])].sort();
    return replace(b.partitionFile, lines.map((l) => `${l}\n`).join(''));
  }
}

interface StorageFault {
  delayMs: number;
  fsync: 'ok' | 'fail' | 'fail_once';
  generation: number;
}

/** Slow and failing fsyncs per broker. */
export class StorageFaults {
  private readonly state = new Map<string, StorageFault>();

  private of(b: Broker): StorageFault {
    const s = this.state.get(b.id) ?? { delayMs: 0, fsync: 'ok', generation: 0 };
    this.state.set(b.id, s);
    return s;
  }

  slow(b: Broker, ms: number): Promise<void> {
    this.of(b).delayMs = ms;
    return this.write(b);
  }

  /** `once` bumps the generation: the broker fails the next fdatasync after each change. */
  fail(b: Broker, mode: 'always' | 'once'): Promise<void> {
    const s = this.of(b);
    if (mode === 'always') {
      s.fsync = 'fail';
    } else {
      s.fsync = 'fail_once';
      s.generation++;
    }
    return this.write(b);
  }

  heal(b: Broker): Promise<void> {
    const s = this.of(b);
    s.delayMs = 0;
    s.fsync = 'ok';
    return this.write(b);
  }

  private write(b: Broker): Promise<void> {
    const s = this.of(b);
    const text = `fsync_delay_ms=${s.delayMs}\nfsync=${s.fsync}\ngeneration=${s.generation}\n`;
    return replace(b.storageFaultFile, text);
  }
}
