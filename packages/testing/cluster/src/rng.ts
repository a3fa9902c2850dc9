/**
 * A small seeded pseudo-random generator: a 32-bit counter advanced by the golden-ratio step,
 * mixed by a murmur-style finaliser. Not for cryptography; for replaying a campaign: the same
 * seed gives the same numbers, and `fork(label)` gives each workload a stream of its own, so
 * one process's choices never depend on how many numbers another one drew.
 */

const GOLDEN = 0x9e3779b9;

function mix32(x: number): number {
  let z = x | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** A 32-bit hash of a label, folded into a seed (FNV-1a over UTF-16 units, then mixed). */
function fold(seed: number, label: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  return mix32(h);
}

export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = mix32(seed ^ GOLDEN);
  }

  /** The next unsigned 32-bit value. */
  next(): number {
    this.state = (this.state + GOLDEN) | 0;
    return mix32(this.state);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next() / 0x1_0000_0000;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** An independent generator named by `label`, decided by this one's seed alone. */
  fork(label: string): Rng {
    return new Rng(fold(this.seed, label));
  }
}

/** A fresh seed for a campaign run without `--seed` (printed, so the run can be replayed). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 0x7fff_ffff);
}
