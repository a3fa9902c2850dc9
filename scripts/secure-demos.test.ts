// Goal: the two security demos (demos/rbac-live, demos/cross-tenant-isolation) keep working: each
// runs end to end against a real control plane and broker and every step says PASS.
// Method: run each demo's main.mjs as a child process from its own folder (so its state goes to
// that folder's .felix/, gitignored) against the built services, then check its exit code and
// that each expected step printed PASS and none printed FAIL. Needs the workspace built and, for
// cross-tenant-isolation, Postgres on 127.0.0.1:5432 (trust, database `test`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DEMOS = join(import.meta.dirname, '..', 'demos');
const DEMO_TIMEOUT_MS = 180_000;

function runDemo(name: string): Promise<{ code: number | null; out: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['main.mjs'], {
      cwd: join(DEMOS, name),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    child.once('error', fail);
    child.once('exit', (code) => done({ code, out }));
  });
}

/** Each step's PASS line, in order; the demo's whole output on a mismatch. */
function expectSteps(out: string, code: number | null, steps: string[]) {
  const passed = out.split('\n').filter((l) => l.startsWith('PASS '));
  expect(out, out).not.toMatch(/^FAIL /m);
  expect(code, out).toBe(0);
  expect(
    passed.map((l) => steps.find((s) => l.startsWith(`PASS ${s}`)) ?? l),
    out,
  ).toEqual(steps);
}

describe('security demos', () => {
  it(
    'the_rbac_live_demo_denies_then_allows_then_denies_again_without_a_restart',
    async () => {
      const { code, out } = await runDemo('rbac-live');
      expectSteps(out, code, [
        'bootstrap tenant acme',
        'without a grant, publish, subscribe and cache write are each forbidden',
        'alice grants role orders-app to bob',
        'the same calls now succeed, with no restart',
        'alice removes the binding',
        'after the revocation, each call is forbidden again',
      ]);
    },
    DEMO_TIMEOUT_MS,
  );

  it(
    'the_cross_tenant_isolation_demo_keeps_t1_tokens_out_of_t2_and_denies_an_ungranted_t2_principal',
    async () => {
      const { code, out } = await runDemo('cross-tenant-isolation');
      expectSteps(out, code, [
        'bootstrap t1 and t2',
        't1 app writes its own stream and cache',
        'a t1 token is refused at auth on a t2 connection',
        "t1's admin token cannot read or change t2's catalog",
        'a t2 principal without grants is forbidden each call',
        "t2's own app works and sees none of t1's data",
      ]);
    },
    DEMO_TIMEOUT_MS,
  );
});
