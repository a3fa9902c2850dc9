/** Judges a whole history against every rule and returns the report. Pure. */
import { HistoryLineMalformedError } from './errors.js';
import { Findings } from './findings.js';
import type { HistoryLine, Report } from './history.js';
import { indexHistory } from './index-ops.js';
import { parseHistory } from './parse.js';
import { checkAckedPublishPresent } from './rules/acked-publish-present.js';
import { checkCacheRegister } from './rules/cache-register.js';
import { checkCounterSum } from './rules/counter-sum.js';
import { checkGroupCompletion } from './rules/group-completion.js';
import { checkMonotonicReads } from './rules/monotonic-reads.js';
import { checkNoPhantomOrDuplicate } from './rules/no-phantom-or-duplicate.js';
import { checkOffsetAgreement } from './rules/offset-agreement.js';
import { checkPerShardOrder } from './rules/per-shard-order.js';
import { computeStats } from './stats.js';

export interface CheckOptions {
  /** Violations kept per rule (byRule counts them all); VIOLATIONS_PER_RULE_MAX by default. */
  violationsPerRuleMax?: number;
}

export function check(lines: readonly HistoryLine[], opts: CheckOptions = {}): Report {
  const findings = new Findings(opts.violationsPerRuleMax);
  const index = indexHistory(lines, findings);
  checkAckedPublishPresent(index, findings);
  checkOffsetAgreement(index, findings);
  checkPerShardOrder(index, findings);
  checkNoPhantomOrDuplicate(index, findings);
  checkMonotonicReads(index, findings);
  checkCacheRegister(index, findings);
  checkCounterSum(index, findings);
  checkGroupCompletion(index, findings);
  const total = Object.values(findings.byRule).reduce((a, b) => a + b, 0);
  return {
    valid: total === 0,
    violations: findings.violations,
    byRule: findings.byRule,
    stats: computeStats(index),
  };
}

/**
 * Parses and checks JSONL text; a line that does not parse makes the report a malformed-history
 * verdict naming it, instead of an error. Size limits still throw their typed errors.
 */
export function checkText(text: string, opts: CheckOptions = {}): Report {
  let lines: HistoryLine[];
  try {
    lines = parseHistory(text);
  } catch (err) {
    if (!(err instanceof HistoryLineMalformedError)) throw err;
    const findings = new Findings(opts.violationsPerRuleMax);
    findings.add('malformed-history', err.message, []);
    return {
      valid: false,
      violations: findings.violations,
      byRule: findings.byRule,
      stats: computeStats(indexHistory([], new Findings())),
    };
  }
  return check(lines, opts);
}
