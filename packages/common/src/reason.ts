/**
 * The reason a failure gives, on one line, for messages an operator reads. Wrappers say little
 * ("fetch failed"), and some errors say nothing at all: Node's connect to a name with both an
 * IPv4 and an IPv6 address fails with an AggregateError whose own message is empty (its
 * `errors` hold the refusals), and some libraries' errors keep their words elsewhere.
 */
import { ERROR_CAUSE_DEPTH_MAX } from './limits.js';

/** The first line of `v` when it is a non-empty string. */
function line(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v.split('\n')[0] : undefined;
}

/** What `e` itself says: its message, else (an AggregateError) its errors' reasons, joined. */
function ownReason(e: unknown, depth: number): string | undefined {
  if (typeof e !== 'object' || e === null) return line(e);
  const x = e as { message?: unknown; errors?: unknown };
  const said = line(x.message);
  if (said !== undefined || !Array.isArray(x.errors) || depth >= ERROR_CAUSE_DEPTH_MAX) return said;
  const parts = new Set<string>();
  for (const inner of x.errors) {
    const r = reasonAt(inner, depth + 1);
    if (r !== undefined) parts.add(r);
  }
  return parts.size === 0 ? undefined : [...parts].join('; ');
}

function reasonAt(err: unknown, depth: number): string | undefined {
  let best: string | undefined;
  let e: unknown = err;
  for (let d = depth; e !== undefined && e !== null && d < ERROR_CAUSE_DEPTH_MAX; d++) {
    best = ownReason(e, d) ?? best;
    e = typeof e === 'object' ? (e as { cause?: unknown }).cause : undefined;
  }
  return best;
}

/**
 * The deepest thing `err`'s chain of causes says (`connect ECONNREFUSED 127.0.0.1:8443` under
 * fetch's "fetch failed"), with an empty AggregateError read through its errors; its `code` or
 * `name` when nothing says anything.
 */
export function errorReason(err: unknown): string {
  const found = reasonAt(err, 0);
  if (found !== undefined) return found;
  const x = err as { code?: unknown; name?: unknown } | null;
  return line(x?.code) ?? line(x?.name) ?? String(err);
}
