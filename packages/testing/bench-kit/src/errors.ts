/** The benchmark kit's failures: each a typed error with a stable code. */
import { FelixError } from '@felix/common';

/** Base of every error the kit throws. */
export abstract class BenchKitError extends FelixError {}

/** The broker process exited, or did not print its `listening` line within the deadline. */
export class BrokerStartError extends BenchKitError {
  readonly code = 'FELIX_BENCH_BROKER_START';
  constructor(
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`the broker did not start: ${reason}`, options);
  }
}

/** A bench's other side (this script again, with `--serve`) exited before it said where it is. */
export class ServeSelfError extends BenchKitError {
  readonly code = 'FELIX_BENCH_SERVE_SELF';
  constructor(
    readonly what: string,
    readonly reason: string,
  ) {
    super(`${what}: ${reason}`);
  }
}

/** A /proc file did not have the shape the kernel documents (proc(5)). */
export class ProcFormatError extends BenchKitError {
  readonly code = 'FELIX_BENCH_PROC_FORMAT';
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: ${reason}`);
  }
}

/** A package's src/ changed after its dist/ was built: the bench would measure old code. */
export class StaleBuildError extends BenchKitError {
  readonly code = 'FELIX_BENCH_STALE_BUILD';
  constructor(
    readonly built: string,
    readonly newer: string,
  ) {
    super(
      `${newer} is newer than ${built}: build first (npx pnpm@10.34.9 run build) so the bench measures this code`,
    );
  }
}
