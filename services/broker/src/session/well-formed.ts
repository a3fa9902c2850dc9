/**
 * The one check a JSON request gets that its decoder does not make: every string it carries is
 * well-formed UTF-16. JSON may write a lone surrogate as an escape (`"k\ud800"`), and parsing
 * turns it into a string that has no UTF-8 bytes: stored or matched as UTF-8 it becomes U+FFFD,
 * so `"k\ud800"`, `"k\udbff"` and `"k\ufffd"` would name one key, one group, one consumer. Such a
 * request is refused (`invalid_request`, reason `lone_surrogate`) before any handler sees it.
 * Binary frames and the quick JSON readers cannot produce one: they decode strict UTF-8 and take
 * no escapes.
 */
import type { Message } from '@felix/wire';
import { Refusal } from './refusal.js';

/** Nesting walked: a request's strings are at its top level or in its list items' fields. */
const DEPTH_MAX = 4;

/** The refusal of a request holding a lone surrogate in a string field, else null. */
export function loneSurrogateRefusal(msg: Message): Refusal | null {
  const field = illFormedField(msg, DEPTH_MAX);
  if (field === null) return null;
  return new Refusal(
    'invalid_request',
    `${msg.type} field ${field} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which no UTF-8 bytes carry`,
    'lone_surrogate',
  );
}

/** The name of the first string field (at most `depth` levels down) that is not well-formed. */
function illFormedField(value: object, depth: number): string | null {
  if (value instanceof Uint8Array) return null;
  // for..in, not Object.entries: no array per request (decoded messages are plain objects).
  for (const name in value) {
    const v: unknown = (value as Record<string, unknown>)[name];
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return name;
    } else if (typeof v === 'object' && v !== null && depth > 0) {
      const inner = illFormedField(v, depth - 1);
      if (inner !== null) return `${name}.${inner}`;
    }
  }
  return null;
}
