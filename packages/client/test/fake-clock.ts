/** A pinned clock for the token keeper and a maker of unsigned JWTs, for the client's tests. */
import type { KeeperClock } from '../src/token/keeper.js';

/** A clock whose timers run only when a test fires them. */
export class FakeClock implements KeeperClock {
  t = 1_700_000_000_000;
  timers: Array<{ at: number; ms: number; fn: () => void }> = [];
  random = () => 0.5;
  now(): number {
    return this.t;
  }
  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, ms, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((x) => x !== timer);
    };
  }
  /** The earliest timer: the clock moves to it and runs it. */
  fire(): void {
    this.timers.sort((a, b) => a.at - b.at);
    const next = this.timers.shift();
    if (next === undefined) throw new Error('no timer is armed');
    this.t = Math.max(this.t, next.at);
    next.fn();
  }
}

export const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
/** A compact JWT with these claims (unsigned: the client never verifies). */
export function jwt(claims: Record<string, unknown>): string {
  return `${b64({ alg: 'EdDSA', kid: 'k1' })}.${b64(claims)}.c2ln`;
}
