/** Collects violations for a report: counts every one, keeps a bounded number per rule. */
import type { HistoryLine, RuleName, Violation } from './history.js';
import { VIOLATION_LINES_MAX, VIOLATIONS_PER_RULE_MAX } from './limits.js';

export const RULES: readonly RuleName[] = [
  'acked-publish-present',
  'offset-agreement',
  'per-shard-order',
  'no-phantom-or-duplicate',
  'monotonic-reads',
  'cache-register',
  'counter-sum',
  'group-completion',
  'malformed-history',
];

export class Findings {
  readonly violations: Violation[] = [];
  readonly byRule = Object.fromEntries(RULES.map((r) => [r, 0])) as Record<RuleName, number>;

  constructor(private readonly perRuleMax: number = VIOLATIONS_PER_RULE_MAX) {}

  add(rule: RuleName, message: string, lines: (HistoryLine | undefined)[]): void {
    this.byRule[rule] += 1;
    if (this.byRule[rule] > this.perRuleMax) return;
    const kept = lines.filter((l): l is HistoryLine => l !== undefined);
    this.violations.push({ rule, message, lines: kept.slice(0, VIOLATION_LINES_MAX) });
  }
}
