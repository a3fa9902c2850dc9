/**
 * Reading the campaign command's options: durations (`60s`, `10m`, `1500ms`), comma lists of
 * nemeses and workloads, broker counts. Bad input is a CampaignOptionError naming the option.
 */
import { WORKLOADS, type WorkloadName } from '../workloads/plan.js';
import { CampaignOptionError } from '../errors.js';
import { NEMESES, type NemesisName } from './schedule.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `90s`, `10m`, `1500ms`, `1h`; a bare number is seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null)
    throw new CampaignOptionError(`--duration: cannot read "${text}" (try 60s or 10m)`);
  const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1_000);
  if (!Number.isFinite(ms) || ms <= 0) throw new CampaignOptionError(`--duration must be positive`);
  return Math.round(ms);
}

function parseList<T extends string>(option: string, text: string, allowed: readonly T[]): T[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const item of items)
    if (!allowed.includes(item as T))
      throw new CampaignOptionError(`${option}: unknown "${item}" (one of ${allowed.join(', ')})`);
  return [...new Set(items)] as T[];
}

/** `kill,pause,partition,fsync`; `none` or empty: no faults. */
export function parseNemeses(text: string): NemesisName[] {
  return text.trim() === 'none' ? [] : parseList('--nemesis', text, NEMESES);
}

export function parseWorkloads(text: string): WorkloadName[] {
  const list = parseList('--workload', text, WORKLOADS);
  if (list.length === 0) throw new CampaignOptionError('--workload: name at least one workload');
  return list;
}

export function parseCount(option: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new CampaignOptionError(
      `${option}: expected an integer of at least ${min}, got "${text}"`,
    );
  return n;
}
