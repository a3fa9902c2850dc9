/**
 * The clocks the control plane reads, injected so tests can drive time: the store stamps rows
 * with `nowMs`, and the sweep measures silence with both.
 */

export interface Clock {
  /** Wall clock (ms since epoch): every stamp the store writes (heartbeats, rows, changes). */
  nowMs(): number;
  /** Monotonic clock (ms): measures silence without trusting wall-clock steps. */
  monoMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monoMs: () => performance.now(),
};
