// What every demo uses to check its own claims: `check(cond, claim, detail)` prints `PASS claim`
// or `FAIL claim` (the line the demos test reads), `waitUntil` waits on a condition with a
// deadline instead of sleeping, and `finish()` ends the demo with exit code 1 if any check failed.
const POLL_MS = 10;
const WAIT_DEADLINE_MS = 30_000;

let passed = 0;
let failed = 0;

/** Prints PASS or FAIL for `claim` (with `detail`, when given) and counts it; answers `cond`. */
export function check(cond, claim, detail) {
  const ok = Boolean(cond);
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${claim}${detail === undefined ? '' : `: ${detail}`}`);
  return ok;
}

/** Resolves once `cond()` answers true (a throw counts as false); rejects after the deadline. */
export async function waitUntil(what, cond, deadlineMs = WAIT_DEADLINE_MS) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(cond)
        .catch(() => false)
    )
      return;
    if (Date.now() >= deadline)
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Whether every check so far held. */
export const allHeld = () => failed === 0;

/** Prints the tally and exits: 0 when every check held (and there was at least one), else 1. */
export function finish() {
  const ok = failed === 0 && passed > 0;
  console.log(`${ok ? 'all' : 'NOT all'} checks held (${passed} held, ${failed} did not)`);
  process.exit(ok ? 0 : 1);
}

// A demo that throws has not shown what it claims: say so in the same form, and exit 1.
process.on('uncaughtException', (err) => {
  console.log(`FAIL the demo ran to its end: ${err?.stack ?? err}`);
  process.exit(1);
});
process.on('unhandledRejection', (err) => {
  console.log(`FAIL the demo ran to its end: ${err?.stack ?? err}`);
  process.exit(1);
});
// Stopped from outside (Ctrl-C, or the demos test's deadline): exiting through process.exit runs
// the exit hooks that kill the demo's broker and control plane.
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    console.log(`FAIL the demo ran to its end: stopped by ${sig}`);
    process.exit(130);
  });
}
