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
import { JSON_STRING_CHECK_DEPTH_MAX } from '../limits.js';
import { Refusal } from './refusal.js';

/** The refusal of a request holding a lone surrogate in a string field, else null. */
export function loneSurrogateRefusal(msg: Message): Refusal | null {
  const field = illFormedField(msg, JSON_STRING_CHECK_DEPTH_MAX);
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
  // An array by index: for..in would make a string key per item (an ack batch's thousand offsets).
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = illFormedValue(value[i], depth);
      if (bad !== null) return bad === '' ? `${i}` : `${i}.${bad}`;
    }
    return null;
  }
  // for..in, not Object.entries: no array per request (decoded messages are plain objects).
  for (const name in value) {
    const bad = illFormedValue((value as Record<string, unknown>)[name], depth);
    if (bad !== null) return bad === '' ? name : `${name}.${bad}`;
  }
  return null;
}

/** '' when `v` is an ill-formed string, the path below it when an object holds one, else null. */
function illFormedValue(v: unknown, depth: number): string | null {
  if (typeof v === 'string') return v.isWellFormed() ? null : '';
  if (typeof v === 'object' && v !== null && depth > 0) return illFormedField(v, depth - 1);
  return null;
}
