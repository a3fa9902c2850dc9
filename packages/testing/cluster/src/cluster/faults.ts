/**
 * The broker's test fault files (docs/reliability.md, "Fault seams in the broker"): who each
 * broker cannot reach, and how its fsyncs misbehave. Files are replaced whole (write, rename) so
 * the broker never reads half a file.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  FAULT_DEADLINE_MS,
  FAULT_FILE_SETTLE_MS,
  PARTITION_ACK_POLL_MS,
  scaled,
} from '../limits.js';
import type { Broker } from './broker.js';

export const CONTROLPLANE = 'controlplane';

async function replace(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

/** The storage fault file is read on demand, at most 50 ms old: after this wait a written fault
 *  is what the next fdatasync reads. (The partition file is acknowledged instead: `Partitions`.) */
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

  /** Writes `b`'s file and, while `b` runs, waits for the broker to acknowledge it: the cut is
   *  in force (its links closed) when this resolves, however slow the machine. A stopped or
   *  paused broker reads the file when it runs again. */
  private async write(b: Broker): Promise<void> {
    const lines = [...(this.cuts.get(b.id) ?? [])].sort();
    const text = lines.map((l) => `${l}\n`).join('');
    await replace(b.partitionFile, text);
    // Past the deadline the fault has already failed (FaultTimeoutError): stop looking.
    const until = performance.now() + scaled(FAULT_DEADLINE_MS);
    while (b.state === 'running' && performance.now() < until) {
      // Not written yet (the broker has not read the file since it started): look again.
      const applied = await readFile(`${b.partitionFile}.applied`, 'utf8').catch(() => undefined);
      if (applied === text) return;
      await sleep(PARTITION_ACK_POLL_MS);
    }
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
