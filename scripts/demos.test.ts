// Goal: every demo under demos/ keeps working and keeps its word: each runs end to end against
// its own broker (and control plane where it needs one) and checks its own claims, printing
// `PASS <claim>` or `FAIL <claim>` (demos/support/checks.mjs) and exiting 1 on any failure; and
// no folder under demos/ goes untested.
// Method: run each demo's main.mjs as a child process from its own folder (its state goes to
// that folder's .felix/, gitignored) against the built services, a few at once; a demo passes
// when it exits 0, printed at least one PASS and no FAIL (the security demos: exactly their
// steps, in order); one still running after RUN_DEADLINE_MS is stopped and fails with what it
// printed. simple-pubsub needs a broker it is pointed at: the quickstart starts a
// control plane and a broker and runs it. Needs the workspace built and, for
// cross-tenant-isolation, Postgres on 127.0.0.1:5432 (trust, database `test`).
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const DEMOS = join(ROOT, 'demos');
/** How long one demo may run before it is stopped (SIGTERM) and fails with what it printed. */
const RUN_DEADLINE_MS = 150_000;
/** A test's bound: its turn in the queue (DEMOS_AT_ONCE at a time) plus its own run. */
const DEMO_TIMEOUT_MS = 420_000;
/** After SIGTERM, how long a demo gets to stop its broker before it is killed. */
const STOP_GRACE_MS = 5_000;
/** Demos run at once: each is a broker (or two services) plus the demo on a 2-core machine. */
const DEMOS_AT_ONCE = 3;
/** Folders under demos/ that are not demos. */
const NOT_DEMOS = ['support'];

interface Run {
  code: number | null;
  out: string;
}

/** At most DEMOS_AT_ONCE runs at a time; the rest wait their turn in order. */
const queue: (() => void)[] = [];
let running = 0;
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= DEMOS_AT_ONCE) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    queue.shift()?.();
  }
}

function run(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return slot(
    () =>
      new Promise((done, fail) => {
        const child = spawn(process.execPath, args, {
          cwd,
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (c: string) => {
          out += c;
        });
        child.stderr.setEncoding('utf8').on('data', (c: string) => {
          out += c;
        });
        const deadline = setTimeout(() => {
          out += `\nFAIL (demos test) still running after ${RUN_DEADLINE_MS} ms: stopped\n`;
          child.kill('SIGTERM');
          setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
        }, RUN_DEADLINE_MS);
        child.once('error', fail);
        child.once('exit', (code) => {
          clearTimeout(deadline);
          done({ code, out });
        });
      }),
  );
}

const runDemo = (name: string, env: NodeJS.ProcessEnv = {}) =>
  run(join(DEMOS, name), ['main.mjs'], env);

/** Exit 0, at least one PASS and no FAIL; the demo's whole output on a mismatch. */
function expectChecksHeld({ code, out }: Run) {
  expect(out, out).not.toMatch(/^FAIL /m);
  expect(out, out).toMatch(/^PASS /m);
  expect(code, out).toBe(0);
}

/** Each step's PASS line, in order; the demo's whole output on a mismatch. */
function expectSteps(result: Run, steps: string[]) {
  expectChecksHeld(result);
  const passed = result.out.split('\n').filter((l) => l.startsWith('PASS '));
  expect(
    passed.map((l) => steps.find((s) => l.startsWith(`PASS ${s}`)) ?? l),
    result.out,
  ).toEqual(steps);
}

/** Every demo and the test that runs it, by folder name. */
const TESTS: Record<string, { name: string; body: () => Promise<void> }> = {
  'simple-pubsub': {
    name: 'the_simple_pubsub_demo_reads_back_what_it_published_through_the_quickstart',
    body: async () => expectChecksHeld(await run(ROOT, ['scripts/quickstart.mjs'])),
  },
  cache: {
    name: 'the_cache_demo_shows_put_get_ttl_delete_a_retained_watch_and_a_counter',
    body: async () => expectChecksHeld(await runDemo('cache')),
  },
  'durable-restart': {
    name: 'the_durable_restart_demo_loses_no_acknowledged_record_across_a_sigkill',
    body: async () => expectChecksHeld(await runDemo('durable-restart')),
  },
  latency: {
    name: 'the_latency_demo_measures_both_transports_and_writes_its_chart',
    // Fewer samples than a person would take: the test shows it runs, the figures are not read.
    body: async () => expectChecksHeld(await runDemo('latency', { FELIX_LATENCY_SAMPLES: '500' })),
  },
  notifications: {
    name: 'the_notifications_demo_fans_out_per_tenant_and_a_late_dashboard_holds_the_last_alerts',
    body: async () => expectChecksHeld(await runDemo('notifications')),
  },
  'cluster-failover': {
    name: 'the_cluster_failover_demo_loses_no_acknowledged_payment_when_the_leader_is_killed',
    body: async () => expectChecksHeld(await runDemo('cluster-failover')),
  },
  consistency: {
    name: 'the_consistency_demo_shows_quorum_refusing_leader_accepting_and_no_lagging_promotion',
    body: async () => expectChecksHeld(await runDemo('consistency')),
  },
  orders: {
    name: 'the_orders_demo_runs_end_to_end',
    body: async () => expectChecksHeld(await runDemo('orders')),
  },
  'queue-semantics': {
    name: 'the_queue_semantics_demo_shows_each_queue_rule_holding',
    body: async () => expectChecksHeld(await runDemo('queue-semantics')),
  },
  'slow-consumer': {
    name: 'the_slow_consumer_demo_keeps_the_publisher_and_the_steady_subscribers_whole_and_tells_the_stalled_one_its_loss',
    body: async () => expectChecksHeld(await runDemo('slow-consumer')),
  },
  'state-divergence': {
    name: 'the_state_divergence_demo_rebuilds_exact_state_from_a_retained_watch_while_a_lossy_subscriber_diverges',
    body: async () => expectChecksHeld(await runDemo('state-divergence')),
  },
  'rbac-live': {
    name: 'the_rbac_live_demo_denies_then_allows_then_denies_again_without_a_restart',
    body: async () =>
      expectSteps(await runDemo('rbac-live'), [
        'bootstrap tenant acme',
        'without a grant, publish, subscribe and cache write are each forbidden',
        'alice grants role orders-app to bob',
        'the same calls now succeed, with no restart',
        'alice removes the binding',
        'after the revocation, each call is forbidden again',
      ]),
  },
  'cross-tenant-isolation': {
    name: 'the_cross_tenant_isolation_demo_keeps_t1_tokens_out_of_t2_and_denies_an_ungranted_t2_principal',
    body: async () =>
      expectSteps(await runDemo('cross-tenant-isolation'), [
        'bootstrap t1 and t2',
        't1 app writes its own stream and cache',
        'a t1 token is refused at auth on a t2 connection',
        "t1's admin token cannot read or change t2's catalog",
        'a t2 principal without grants is forbidden each call',
        "t2's own app works and sees none of t1's data",
      ]),
  },
};

describe.concurrent('demos', () => {
  it('every_folder_under_demos_is_run_by_the_demos_test', () => {
    const folders = readdirSync(DEMOS)
      .filter((f) => statSync(join(DEMOS, f)).isDirectory() && !f.startsWith('.'))
      .filter((f) => !NOT_DEMOS.includes(f))
      .sort();
    expect(folders).toEqual(Object.keys(TESTS).sort());
  });

  for (const { name, body } of Object.values(TESTS)) it(name, body, DEMO_TIMEOUT_MS);
});
