/** A report as plain text: the verdict on the first line, then each rule with its first cases. */
import { RULES } from './findings.js';
import type { Report } from './history.js';
import { TEXT_LINE_CHARS_MAX, TEXT_VIOLATIONS_PER_RULE_SHOWN } from './limits.js';

function verdict(report: Report): string {
  const opCount = Object.values(report.stats.ops).reduce((n, c) => n + c.ok + c.fail + c.info, 0);
  const total = RULES.reduce((n, r) => n + report.byRule[r], 0);
  if (report.valid) return `VALID: ${opCount} ops, 0 violations`;
  const broken = RULES.filter((r) => report.byRule[r] > 0)
    .map((r) => `${r} ${report.byRule[r]}`)
    .join(', ');
  return `INVALID: ${total} violation${total === 1 ? '' : 's'} (${broken})`;
}

function cut(text: string): string {
  return text.length > TEXT_LINE_CHARS_MAX ? `${text.slice(0, TEXT_LINE_CHARS_MAX)}…` : text;
}

export function renderText(report: Report): string {
  const out = [verdict(report), ''];
  for (const rule of RULES) {
    const count = report.byRule[rule];
    out.push(`${rule}: ${count}`);
    const shown = report.violations
      .filter((v) => v.rule === rule)
      .slice(0, TEXT_VIOLATIONS_PER_RULE_SHOWN);
    for (const v of shown) {
      out.push(`  - ${v.message}`);
      for (const line of v.lines) out.push(`      ${cut(JSON.stringify(line))}`);
    }
    if (count > shown.length) out.push(`  … and ${count - shown.length} more`);
  }
  const s = report.stats;
  out.push('');
  out.push(
    `duration ${s.durationMs} ms, ${s.okPerSecond.toFixed(1)} ok/s, ${s.faults} faults, ` +
      `${s.redeliveries} redeliveries, longest unavailability ${s.longestUnavailabilityMs} ms`,
  );
  for (const [f, c] of Object.entries(s.ops)) {
    out.push(`  ${f}: ok ${c.ok}, fail ${c.fail}, info ${c.info}`);
  }
  return `${out.join('\n')}\n`;
}
