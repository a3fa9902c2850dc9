/** Keyset paging cursors: base64url of the last returned key, as a JSON array. */
import { InvalidCursorError } from '../errors.js';
import { CURSOR_CHARS_MAX } from '../limits.js';

export type CursorKey = (string | number)[];

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** Decodes a cursor of `arity` parts, each a string or a number as `shape` says. */
export function decodeCursor(cursor: string, shape: readonly ('s' | 'n')[]): CursorKey {
  if (cursor.length > CURSOR_CHARS_MAX) throw new InvalidCursorError('cursor is too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError('cursor is not one this server issued');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== shape.length ||
    parsed.some((v, i) => (shape[i] === 's' ? typeof v !== 'string' : !Number.isSafeInteger(v)))
  ) {
    throw new InvalidCursorError('cursor is not one this server issued');
  }
  return parsed as CursorKey;
}
